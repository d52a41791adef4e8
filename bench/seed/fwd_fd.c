/* SPDX-License-Identifier: MIT */
/*
 * fwd_fd.c - the seed's fwd program on kernel channels:
 *   <writers> writers -> 1 forwarder -> <readers> readers.
 *   (default)   fwd-pipe         threads sharing two pipes
 *   FWD_SOCKET  fwd-socket       threads sharing two Unix SOCK_SEQPACKET
 *                                socket pairs (one record per message)
 *   FWD_PROC    fwd-pipe-proc / fwd-socket-proc: writers and readers are
 *               processes, the forwarder is the parent.
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
#include "seed.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* [0]: read end, [1]: write end. */
static int in_fd[2], out_fd[2];
static struct fwd_shared *shared;
static long n_writers;

static void make_channel(int fd[2])
{
#ifdef FWD_SOCKET
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		seed_die("socketpair: %s", strerror(errno));
	fd[0] = sv[0];
	fd[1] = sv[1];
#else
	if (pipe2(fd, O_CLOEXEC) < 0)
		seed_die("pipe2: %s", strerror(errno));
#endif
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
			seed_die("read: %s", strerror(errno));
		seed_die("read: %zd bytes instead of a whole message", n);
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
			seed_die("write: %s", strerror(errno));
		seed_die("write: %zd bytes instead of a whole message", n);
	}
}

static void *writer(void *arg)
{
	int id = (int)(intptr_t)arg;
	long quota = fwd_writer_quota(id, n_writers);
	struct fwd_msg m;
	for (long k = 0; k < quota; k++) {
		fwd_msg_fill(&m, id, k);
		if (!write_msg(in_fd[1], &m))
			break; /* the forwarder closed the channel: stop */
	}
#ifndef FWD_PROC
	if (atomic_fetch_sub(&shared->writers_left, 1) == 1)
		close(in_fd[1]);
#endif
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	long got = 0, bad = 0;
	struct fwd_msg m;
	while (read_msg(out_fd[0], &m)) {
		bad += !fwd_msg_check(&m);
		got++;
	}
	if (bad)
		seed_die("reader: %ld corrupted messages", bad);
	atomic_fetch_add(&shared->received, got);
	return NULL;
}

static long forward(void)
{
	long done = 0;
	struct fwd_msg m;
	while (done < FWD_FORWARD_MAX && read_msg(in_fd[0], &m)) {
		if (!write_msg(out_fd[1], &m))
			seed_die("the readers closed the output");
		done++;
	}
	close(in_fd[0]);
	close(out_fd[1]);
	atomic_store(&shared->forwarded, done);
	return done;
}

#ifndef FWD_PROC
static void *forwarder(void *arg)
{
	(void)arg;
	forward();
	return NULL;
}
#endif

int main(int argc, char **argv)
{
	long n_readers;
	fwd_parse_args(argc, argv, &n_writers, &n_readers);
	signal(SIGPIPE, SIG_IGN);
	make_channel(in_fd);
	make_channel(out_fd);
	shared = fwd_shared_new(n_writers);
	seed_working();

#ifdef FWD_PROC
	for (long i = 0; i < n_readers; i++)
		if (seed_fork() == 0) {
			close(in_fd[0]);
			close(in_fd[1]);
			close(out_fd[1]);
			reader(NULL);
			_exit(0);
		}
	close(out_fd[0]);
	for (long i = 0; i < n_writers; i++)
		if (seed_fork() == 0) {
			close(in_fd[0]);
			close(out_fd[1]);
			writer((void *)(intptr_t)i);
			_exit(0);
		}
	close(in_fd[1]);
	long done = forward();
	long bad = seed_wait_children(n_readers + n_writers);
	if (bad)
		seed_die("%ld children failed", bad);
#else
	pthread_t *r = seed_spawn((size_t)n_readers, reader, NULL, 0);
	pthread_t *f = seed_spawn(1, forwarder, NULL, 0);
	pthread_t *w = seed_spawn((size_t)n_writers, writer, NULL, 0);
	seed_join(w, (size_t)n_writers);
	seed_join(f, 1);
	seed_join(r, (size_t)n_readers);
	close(out_fd[0]);
	long done = atomic_load(&shared->forwarded);
#endif
	long got = atomic_load(&shared->received);
	if (got != done)
		seed_die("forwarded %ld messages but readers received %ld", done, got);
	seed_end();
	return 0;
}
