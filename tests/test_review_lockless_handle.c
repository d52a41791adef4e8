/*
 * test_review_lockless_handle - a live process whose handle could not take
 * its liveness lock must not be repaired as dead by its peers.
 *
 * Defect (hostile review of issue 11): canal__attach (liveness.c) takes an
 * attacher id, then a description of its own through /proc/self/fd; when
 * that open fails (no /proc mounted: a chroot or a container; or no
 * descriptor left, EMFILE) it returns 0 with lock_fd = -1 and the id
 * unlocked. Its claims are named with that id, and every peer that has a
 * lock asks F_OFD_GETLK on the id's byte, finds no lock and concludes the
 * claimer is gone (canal__attacher_gone): after 1 ms (REPAIR_CHECK_NS) the
 * peer repairs the live process's slot. A reserve is withdrawn and its
 * commit fails (with -EINVAL, not the documented -EOWNERDEAD: the repaired
 * stamp no longer looks reserved, single_copy.c slot_is_reserved); a live receiver's slot is freed while it
 * copies (the element is lost). liveness.c's header says the opposite:
 * "Without /proc ... its named claims are never taken for dead".
 *
 * Two deterministic triggers:
 *  1. EMFILE (no root needed): the child opens its handle with
 *     canal_chan_open_fd under an RLIMIT_NOFILE that leaves room for the
 *     handle's own descriptor but not for the lock's;
 *  2. (as root only) the usual hand-over between users: a named channel
 *     of mode 0600 handed to a process of another uid (here setuid to
 *     nobody; as canal_chan_send_handle would): its open of
 *     /proc/self/fd/N is refused (EACCES), the handle works, unlocked.
 * A correct library either fails the open with a clear error or keeps
 * the child's claims alive; both pass.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <fcntl.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

enum how { BY_EMFILE, BY_OTHER_USER };

static bool run(struct canal_chan *ch, enum how how)
{
	int ready[2];
	CHECK_EQ(pipe(ready), 0);

	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		if (how == BY_EMFILE) {
			int lowest = open("/dev/null", O_RDONLY);
			CHECK(lowest >= 0);
			close(lowest);
			struct rlimit rl;
			CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
			rl.rlim_cur = (rlim_t)lowest + 1; /* one more fd */
			CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
		} else {
			CHECK_EQ(setgid(65534), 0);
			CHECK_EQ(setuid(65534), 0);
		}
		struct canal_chan *mine = NULL;
		int r = canal_chan_open_fd(canal_chan_fd(ch), sizeof(long), 1,
					   CANAL_SHARED, &mine);
		if (r != 0) {
			fprintf(stderr, "child: open_fd -> %d (%s)\n", r,
				canal_strerror(r));
			char c = 'E';
			CHECK_EQ(write(ready[1], &c, 1), 1);
			_exit(0); /* a clear error: correct */
		}
		struct canal_slot s;
		CHECK_EQ(canal_send_reserve(mine, &s), 0);
		*(long *)s.data = 42;
		char c = 'R';
		CHECK_EQ(write(ready[1], &c, 1), 1);
		/* A live process holding its slot a while (as a writer
		 * filling a large element in place would). */
		struct timespec ts = { 0, 300000000 };
		nanosleep(&ts, NULL);
		r = canal_send_commit(mine, &s);
		if (r != 0)
			fprintf(stderr, "child: canal_send_commit -> %d (%s)\n",
				r, canal_strerror(r));
		_exit(r == 0 ? 0 : 1);
	}
	close(ready[1]);
	char c;
	CHECK_EQ(read(ready[0], &c, 1), 1);
	close(ready[0]);
	long v = 0;
	int r = 0;
	if (c == 'R') {
		r = canal_recv_timeout(ch, &v, 3000000000ll);
		fprintf(stderr, "parent: canal_recv_timeout -> %d, v = %ld\n",
			r, v);
	}
	int status;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	bool ok = WEXITSTATUS(status) == 0 && (c != 'R' || (r == 0 && v == 42));
	fprintf(stderr, "%s: %s\n",
		how == BY_EMFILE ? "EMFILE" : "another user",
		ok ? "ok" : "a live handle was repaired as dead");
	return ok;
}

int main(void)
{
	alarm(30);
	struct canal_chan *ch = canal_chan_create(sizeof(long), 1, CANAL_SHARED);
	CHECK(ch);
	bool ok_emfile = run(ch, BY_EMFILE);
	bool ok_user = true;
	canal_chan_destroy(ch);

	if (geteuid() != 0) {
		fprintf(stderr, "not root: the hand-over to another user is "
				"skipped\n");
	} else {
		char name[64];
		snprintf(name, sizeof(name), "canal-review-lockless-%d",
			 (int)getpid());
		ch = NULL;
		CHECK_EQ(canal_chan_create_named(name, sizeof(long), 1,
						 CANAL_SHARED, 0600, &ch),
			 0);
		canal_chan_unlink(name);
		ok_user = run(ch, BY_OTHER_USER);
		canal_chan_destroy(ch);
	}
	CHECK(ok_emfile);
	CHECK(ok_user);
	TEST_DONE("test_review_lockless_handle");
}
