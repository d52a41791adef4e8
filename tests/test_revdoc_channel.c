/* test_revdoc_channel.c - channel.h's documented errors against what the
 * code returns, where the system calls under it say something else:
 *  - canal_chan_send_handle to a peer that closed its end: the header's
 *    -ECONNRESET, not sendmsg(2)'s -EPIPE (canal's "channel closed");
 *  - canal_chan_unlink by a user that may not remove the name (another
 *    user's channel in the sticky /dev/shm): the header's -EACCES (glibc's
 *    shm_unlink already turns unlink(2)'s EPERM into EACCES: kept as a
 *    check; root only: a child drops to nobody; skipped otherwise);
 *  - canal_chan_create_named where /dev/shm cannot hold the channel (a
 *    container's small /dev/shm): an error at creation, -ENOSPC, not a
 *    channel that is made, then damaged (-EBADMSG, its elements lost) at
 *    the first slot past the space left, nor a SIGBUS that kills the
 *    creator when /dev/shm is full (root only: a child mounts a 64 KiB
 *    tmpfs over /dev/shm in a mount namespace of its own; skipped where
 *    it cannot).
 *
 * Failed before its fix with: send_handle -EPIPE; a 1 MiB channel
 * created in 64 KiB, its send 2713 then -EBADMSG; the creation of a
 * channel in a full /dev/shm killed by SIGBUS.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "expect.h"

static void shm_name(char *name, size_t size, const char *what)
{
	snprintf(name, size, "canal-revdoc-%s-%d", what, (int)getpid());
}

/* The status of child pid: its exit code, or 128 + the signal that
 * killed it. */
static int child_status(pid_t pid)
{
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "child killed by signal %d (%s)\n",
			WTERMSIG(st), strsignal(WTERMSIG(st)));
		return 128 + WTERMSIG(st);
	}
	return WEXITSTATUS(st);
}

/* Exit code of a child that could not set its scene up: skipped. */
#define SKIPPED 77

/* Another user's channel: unlink says "permission denied". */
static void test_unlink_not_owner(void)
{
	if (geteuid() != 0) {
		printf("test_unlink_not_owner: skipped (needs root to be "
		       "another user)\n");
		return;
	}
	char name[64];
	shm_name(name, sizeof name, "unlink");
	struct canal_chan *ch = NULL;
	CHECK_EQ(canal_chan_create_named(name, 8, 4, CANAL_SHARED, 0666, &ch),
		 0);
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		expect_failures = 0; /* the child's own */
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(SKIPPED);
		struct canal_chan *o = NULL;
		/* It may open it (mode 0666), not remove its name. */
		EXPECT(canal_chan_open(name, 8, 4, CANAL_SHARED, &o), 0);
		canal_chan_destroy(o);
		EXPECT(canal_chan_unlink(name), -EACCES);
		_exit(expect_failures ? 1 : 0);
	}
	int st = child_status(pid);
	if (st == SKIPPED)
		printf("test_unlink_not_owner: skipped (setuid refused)\n");
	else
		CHECK_EQ(st, 0);
	CHECK_EQ(canal_chan_unlink(name), 0);
	canal_chan_destroy(ch);
}

/* The peer closed its end: -ECONNRESET, on a stream and a seqpacket
 * socket. */
static void test_send_handle_peer_closed(void)
{
	static const int types[] = {SOCK_STREAM, SOCK_SEQPACKET};
	struct canal_chan *s = canal_chan_create(8, 4, CANAL_SHARED);
	CHECK(s);
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		int sv[2];
		CHECK_EQ(socketpair(AF_UNIX, types[i] | SOCK_CLOEXEC, 0, sv),
			 0);
		close(sv[1]);
		EXPECT(canal_chan_send_handle(sv[0], s), -ECONNRESET);
		close(sv[0]);
	}
	canal_chan_destroy(s);
}

/* In the child: a mount namespace of its own with a 64 KiB /dev/shm.
 * false where that is not allowed. */
static bool small_dev_shm(void)
{
	if (unshare(CLONE_NEWNS) != 0)
		return false;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return false;
	return mount("canal-revdoc", "/dev/shm", "tmpfs", 0,
		     "size=64k,mode=1777") == 0;
}

static void full_dev_shm_child(void)
{
	char name[64];
	struct canal_chan *ch = (struct canal_chan *)1;

	/* 1 MiB of slots in 64 KiB: refused at creation, no name left. */
	shm_name(name, sizeof name, "big");
	int r = canal_chan_create_named(name, 8, (size_t)1 << 16,
					CANAL_SHARED, 0, &ch);
	if (r == 0) {
		/* What the channel did with it: every send up to its
		 * capacity must succeed (it said it was made). */
		uint64_t v = 0;
		int s = 0;
		for (; v < ((uint64_t)1 << 16) && s == 0; v++)
			s = canal_try_send(ch, &v);
		fprintf(stderr, "create_named of 1 MiB in 64 KiB: 0; send "
				"%llu: %d (%s)\n",
			(unsigned long long)v, s, strerror(-s));
		canal_chan_destroy(ch);
		canal_chan_unlink(name);
	}
	EXPECT(r, -ENOSPC);
	CHECK(r == 0 || ch == NULL);
	EXPECT(canal_chan_unlink(name), -ENOENT);

	/* A small one fits. */
	shm_name(name, sizeof name, "small");
	EXPECT(canal_chan_create_named(name, 8, 4, CANAL_SHARED, 0, &ch), 0);
	uint64_t v = 5;
	EXPECT(canal_send(ch, &v), 0);
	v = 0;
	EXPECT(canal_recv(ch, &v), 0);
	CHECK_EQ(v, 5);
	canal_chan_destroy(ch);
	EXPECT(canal_chan_unlink(name), 0);

	/* /dev/shm full to its last byte: refused, not killed. */
	int fd = open("/dev/shm/filler", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	static char page[4096];
	while (write(fd, page, sizeof page) > 0)
		;
	shm_name(name, sizeof name, "full");
	EXPECT(canal_chan_create_named(name, 8, 4, CANAL_SHARED, 0, &ch),
	       -ENOSPC);
	EXPECT(canal_chan_unlink(name), -ENOENT);
	close(fd);
	_exit(expect_failures ? 1 : 0);
}

static void test_create_named_no_space(void)
{
	if (geteuid() != 0) {
		printf("test_create_named_no_space: skipped (needs root to "
		       "mount a small /dev/shm)\n");
		return;
	}
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		expect_failures = 0; /* the child's own */
		if (!small_dev_shm())
			_exit(SKIPPED);
		full_dev_shm_child();
	}
	int st = child_status(pid);
	if (st == SKIPPED)
		printf("test_create_named_no_space: skipped (no mount "
		       "namespace here)\n");
	else
		CHECK_EQ(st, 0);
}

int main(void)
{
	alarm(30); /* a hang is a failure */
	test_send_handle_peer_closed();
	test_unlink_not_owner();
	test_create_named_no_space();
	CHECK_EQ(expect_failures, 0);
	TEST_DONE("test_revdoc_channel");
}
