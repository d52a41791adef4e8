/* SPDX-License-Identifier: MIT */
/*
 * fwd_fd.c - fwd's transports on kernel channels (fwd.c runs them):
 *   pipe     two pipes shared by all threads (or inherited by processes)
 *   socket   two Unix SOCK_SEQPACKET socket pairs (one record per message)
 *
 * Whole messages: a 68-byte write on a pipe is atomic (< PIPE_BUF) and every
 * read asks for exactly one message, so with only whole messages in the pipe
 * a read returns exactly one; a SOCK_SEQPACKET read returns one record.
 * Closing: the forwarder closes its read end of the input (blocked and later
 * writers get EPIPE; SIGPIPE is ignored) and the write end of the output
 * (readers get end of file once it is drained). Writers that finish their
 * quota close their write end (processes: by exiting; threads: the last one
 * closes the shared descriptor), so the forwarder also stops on end of file.
 */
#define _GNU_SOURCE /* pipe2 */
#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* [0]: read end, [1]: write end. */
static int in_fd[2], out_fd[2];

static void make_pipe(int fd[2])
{
	if (pipe2(fd, O_CLOEXEC) < 0)
		bench_die("pipe2: %s", strerror(errno));
}

static void make_socket(int fd[2])
{
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fd) < 0)
		bench_die("socketpair: %s", strerror(errno));
}

static int setup_pipe(int shared)
{
	(void)shared; /* inherited across fork as they are */
	make_pipe(in_fd);
	make_pipe(out_fd);
	return 0;
}

static int setup_socket(int shared)
{
	(void)shared;
	make_socket(in_fd);
	make_socket(out_fd);
	return 0;
}

static void keep_only(enum seed_role role)
{
	switch (role) {
	case SEED_READER:
		close(in_fd[0]);
		close(in_fd[1]);
		close(out_fd[1]);
		break;
	case SEED_WRITER:
		close(in_fd[0]);
		close(out_fd[0]);
		close(out_fd[1]);
		break;
	case SEED_FORWARDER:
		close(in_fd[1]);
		close(out_fd[0]);
		break;
	}
}

/* Read one whole message: 1, or 0 at end of file. */
static int read_msg(int fd, struct fwd_msg *m)
{
	for (;;) {
		ssize_t n = read(fd, m, sizeof(*m));
		if (n == (ssize_t)sizeof(*m))
			return 1;
		if (n == 0)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == ECONNRESET)
			return 0;
		if (n < 0)
			bench_die("read: %s", strerror(errno));
		bench_die("read: %zd bytes instead of a whole message", n);
	}
}

/* Write one whole message: 1, or 0 if the reading side is closed. */
static int write_msg(int fd, const struct fwd_msg *m)
{
	for (;;) {
		ssize_t n = write(fd, m, sizeof(*m));
		if (n == (ssize_t)sizeof(*m))
			return 1;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EPIPE || errno == ECONNRESET ||
			      errno == ECONNREFUSED))
			return 0;
		if (n < 0)
			bench_die("write: %s", strerror(errno));
		bench_die("write: %zd bytes instead of a whole message", n);
	}
}

static void writer(int id, long quota)
{
	struct fwd_msg m;

	for (long k = 0; k < quota; k++) {
		fwd_msg_fill(&m, id, k);
		if (!write_msg(in_fd[1], &m))
			break; /* the forwarder closed the channel: stop */
	}
}

static void writers_done(int shared)
{
	if (!shared) /* processes closed their write end by exiting */
		close(in_fd[1]);
}

static long reader(long *bad)
{
	struct fwd_msg m;
	long got = 0;

	while (read_msg(out_fd[0], &m)) {
		*bad += !fwd_msg_check(&m);
		got++;
	}
	return got;
}

static long forward(long max)
{
	struct fwd_msg m;
	long done = 0;

	while (done < max && read_msg(in_fd[0], &m)) {
		if (!write_msg(out_fd[1], &m))
			bench_die("the readers closed the output");
		done++;
	}
	close(in_fd[0]);
	close(out_fd[1]);
	return done;
}

static void teardown(int shared)
{
	if (!shared)
		close(out_fd[0]);
}

const struct fwd_transport fwd_fd_transports[] = {
	{ .name = "pipe", .setup = setup_pipe, .keep_only = keep_only, .writer = writer,
	  .writers_done = writers_done, .reader = reader, .forward = forward,
	  .teardown = teardown },
	{ .name = "socket", .setup = setup_socket, .keep_only = keep_only, .writer = writer,
	  .writers_done = writers_done, .reader = reader, .forward = forward,
	  .teardown = teardown },
	{ .name = NULL },
};
