/*
 * test_revlive_held - attacks on branch live's liveness (liveness.c) that
 * held (the control of the hostile review; every check passes on live).
 *
 *  1. A child of a child: C uses an inherited handle (record lock), forks
 *     G, which never uses it; C is killed: C is seen dead while G lives
 *     (record locks are not inherited).
 *  2. exec: a forked child that used an inherited handle (record lock),
 *     and a process with a handle of its own (OFD lock held by a mapping)
 *     each exec a program that is not canal: both are seen dead while
 *     their pid lives on.
 *  3. Different files in one forked child: handles of two channels (an
 *     anonymous one and a named one), both used; canal's closes of the
 *     named channel's descriptors (an open by name and destroy, an open by
 *     descriptor and destroy) and a canal_chan_recv_handle of the
 *     anonymous channel whose message carries an extra descriptor of the
 *     named one: both ids stay alive, and die with the child.
 *
 * Every process is bounded by alarm(); every wait has a deadline.
 */
#define _GNU_SOURCE 1
#include "liveness_check.h"

#include <sys/socket.h>
#include <sys/wait.h>

static void grandchild(void)
{
	struct canal_chan *ch = canal_chan_create(8, 4, CANAL_SHARED);
	CHECK(ch);
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t c = test_fork();
	CHECK(c >= 0);
	if (c == 0) {
		alarm(20);
		uint32_t id = self_id(ch);
		pid_t g = fork();
		CHECK(g >= 0);
		if (g == 0) {
			alarm(10);
			pause();
			_exit(0);
		}
		report_and_wait(p[1], id, g);
	}
	uint32_t id;
	pid_t g;
	read_report(p[0], &id, &g);
	CHECK(kill_seen_dead(ch, id, c, 5000));
	CHECK(kill(g, 0) == 0);
	kill(g, SIGKILL);
	close(p[0]);
	close(p[1]);
	canal_chan_destroy(ch);
}

static void exec_drops(bool own_handle)
{
	struct canal_chan *ch = canal_chan_create(8, 4, CANAL_SHARED);
	CHECK(ch);
	int p[2], q[2];
	CHECK(pipe(p) == 0 && pipe(q) == 0);
	pid_t c = test_fork();
	CHECK(c >= 0);
	if (c == 0) {
		alarm(20);
		struct canal_chan *h = ch;
		if (own_handle)
			CHECK_EQ(canal_chan_open_fd(canal_chan_fd(ch), 8, 4,
						    CANAL_SHARED, &h),
				 0);
		uint32_t id = self_id(h);
		write_all(p[1], &id, sizeof id);
		char go;
		read_all(q[0], &go, 1);
		execl("/bin/sleep", "sleep", "10", (char *)NULL);
		_exit(127);
	}
	uint32_t id;
	read_all(p[0], &id, sizeof id);
	CHECK(!canal__attacher_gone(ch, id));
	write_all(q[1], "x", 1);
	CHECK(seen_dead(ch, id, 5000));
	CHECK(kill(c, 0) == 0); /* its pid lives (sleep) */
	kill(c, SIGKILL);
	CHECK(waitpid(c, NULL, 0) == c);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
	canal_chan_destroy(ch);
}

static int send_fds(int sock, int a, int b)
{
	char byte = 'c';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = u.buf,
			      .msg_controllen = sizeof u.buf };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(2 * sizeof(int));
	int fds[2] = { a, b };
	memcpy(CMSG_DATA(cm), fds, sizeof fds);
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static void two_files(void)
{
	char name[64];
	snprintf(name, sizeof name, "canal-test-revlive-held-%d", (int)getpid());
	struct canal_chan *a = canal_chan_create(8, 4, CANAL_SHARED), *b;
	CHECK(a);
	CHECK_EQ(canal_chan_create_named(name, 8, 4, CANAL_SHARED, 0600, &b),
		 0);
	int sv[2], p[2], q[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(pipe(p) == 0 && pipe(q) == 0);
	pid_t c = test_fork();
	CHECK(c >= 0);
	if (c == 0) {
		alarm(20);
		uint32_t ids[2] = { self_id(a), self_id(b) };
		struct canal_chan *h;
		/* canal's closes of the named file's descriptors */
		CHECK_EQ(canal_chan_open(name, 8, 4, CANAL_SHARED, &h), 0);
		(void)self_id(h);
		canal_chan_destroy(h);
		CHECK_EQ(canal_chan_open_fd(canal_chan_fd(b), 8, 4,
					    CANAL_SHARED, &h),
			 0);
		(void)self_id(h);
		canal_chan_destroy(h);
		/* a hand-over of a, with an extra descriptor of b */
		CHECK_EQ(send_fds(sv[0], canal_chan_fd(a), canal_chan_fd(b)),
			 0);
		CHECK_EQ(canal_chan_recv_handle(sv[1], 8, 4, CANAL_SHARED,
						&h),
			 -EBADMSG);
		CHECK_EQ(canal_chan_send_handle(sv[0], a), 0);
		CHECK_EQ(canal_chan_recv_handle(sv[1], 8, 4, CANAL_SHARED,
						&h),
			 0);
		(void)self_id(h);
		canal_chan_destroy(h);
		write_all(p[1], ids, sizeof ids);
		char go;
		read_all(q[0], &go, 1);
		(void)self_id(a);
		(void)self_id(b);
		pause();
		_exit(0);
	}
	uint32_t ids[2];
	read_all(p[0], ids, sizeof ids);
	CHECK(!canal__attacher_gone(a, ids[0]));
	CHECK(!canal__attacher_gone(b, ids[1]));
	write_all(q[1], "x", 1);
	CHECK(kill(c, SIGKILL) == 0);
	CHECK(waitpid(c, NULL, 0) == c);
	CHECK(seen_dead(a, ids[0], 5000));
	CHECK(seen_dead(b, ids[1], 5000));
	CHECK_EQ(canal_chan_unlink(name), 0);
	canal_chan_destroy(a);
	canal_chan_destroy(b);
	close(sv[0]);
	close(sv[1]);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

int main(void)
{
	grandchild();
	exec_drops(false);
	exec_drops(true);
	two_files();
	TEST_DONE("test_revlive_held");
}
