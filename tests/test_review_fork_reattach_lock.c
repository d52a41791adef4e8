/*
 * test_review_fork_reattach_lock - a process forked while another of its
 * threads re-attaches a shared channel must be able to use its channels.
 *
 * Defect (hostile review of issue 11): liveness.c serializes re-attaching
 * (after fork) with a process-wide pthread mutex, reattach_lock, and
 * registers no pthread_atfork handler for it (only cached_pid is reset).
 * A fork() while one thread holds it (a forked child's thread making its
 * first claim on a channel: close, open of /proc/self/fd/N, fcntl) copies
 * it locked into the new process, where nobody will ever unlock it: that
 * process's first claim on any shared channel it has not re-attached
 * blocks for ever in pthread_mutex_lock (canal__self_id -> reattach), even
 * canal_try_send.
 *
 * Here: a child of the test has 1000 inherited shared channels; one thread
 * re-attaches them one after another (a try_send on each) while its main
 * thread forks grandchildren, each of which does one canal_try_send on a
 * channel and exits. A grandchild still blocked after 2 s (killed by its
 * alarm) shows the defect. With the mutex held most of the time by the
 * re-attaching thread, a few forks are enough.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <sys/wait.h>

#define NCH 1000
#define FORKS 40

static struct canal_chan *chans[NCH];
static _Atomic int progress;

static void *reattacher(void *arg)
{
	(void)arg;
	for (int i = 0; i < NCH; i++) {
		long v = i;
		int r = canal_try_send(chans[i], &v);
		CHECK(r == 0 || r == -EAGAIN);
		atomic_store(&progress, i + 1);
	}
	return NULL;
}

static int child(void)
{
	pthread_t t = spawn(reattacher, NULL);
	pid_t kids[FORKS];
	int nk = 0;
	while (nk < FORKS && atomic_load(&progress) < NCH) {
		if (atomic_load(&progress) == 0)
			continue;
		pid_t g = fork();
		if (g == 0) {
			alarm(2);
			long v = 1;
			int r = canal_try_send(chans[NCH - 1], &v);
			_exit(r == 0 || r == -EAGAIN ? 0 : 3);
		}
		CHECK(g > 0);
		kids[nk++] = g;
	}
	join(t);
	int hung = 0;
	for (int i = 0; i < nk; i++) {
		int status;
		CHECK_EQ(waitpid(kids[i], &status, 0), kids[i]);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
			hung++;
		else
			CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	fprintf(stderr, "%d of %d grandchildren forked during re-attach "
			"blocked for ever in their first canal_try_send\n",
		hung, nk);
	return hung ? 1 : 0;
}

int main(void)
{
	alarm(60);
	for (int i = 0; i < NCH; i++) {
		chans[i] = canal_chan_create(sizeof(long), 1, CANAL_SHARED);
		CHECK(chans[i]);
	}
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(child());
	int status;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	for (int i = 0; i < NCH; i++)
		canal_chan_destroy(chans[i]);
	TEST_DONE("test_review_fork_reattach_lock");
}
