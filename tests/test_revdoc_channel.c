/* test_revdoc_channel.c - channel.h's documented errors against what the
 * code returns, where the system calls under it say something else:
 *  - canal_chan_send_handle to a peer that closed its end: the header's
 *    -ECONNRESET, not sendmsg(2)'s -EPIPE (canal's "channel closed");
 *  - canal_chan_unlink by a user that may not remove the name (another
 *    user's channel in the sticky /dev/shm): the header's -EACCES (glibc's
 *    shm_unlink already turns unlink(2)'s EPERM into EACCES: kept as a
 *    check; root only: a child drops to nobody; skipped otherwise).
 *
 * Failed before its fix with: send_handle -EPIPE.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <sys/socket.h>
#include <sys/wait.h>

static int expect_failures;

static void expect_value(const char *what, long got, long want)
{
	if (got == want)
		return;
	fprintf(stderr, "%s: %ld (%s), want %ld (%s)\n", what, got,
		strerror((int)-got), want, strerror((int)-want));
	expect_failures++;
}

#define EXPECT(call, want) expect_value(#call, (long)(call), (long)(want))

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

int main(void)
{
	alarm(30); /* a hang is a failure */
	test_send_handle_peer_closed();
	test_unlink_not_owner();
	CHECK_EQ(expect_failures, 0);
	TEST_DONE("test_revdoc_channel");
}
