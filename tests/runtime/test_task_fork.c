/* test_task_fork.c - fork() by a plain thread while a runtime runs in
 * another thread of the process.
 *
 * The child has none of the runtime's threads: it has no runtime. So:
 *  1. the child may run one of its own: canal_run returns 0 there (not
 *     -EBUSY, "a runtime is already running");
 *  2. the child's copy of a private channel on which a task of the parent
 *     was parked at the fork works between the child's threads: a send
 *     wakes the child's receiving thread (the parent's parked task, copied
 *     into the child's memory, must not take that wake-up, which would
 *     leave the receiver asleep for ever).
 * The parent's runtime is not disturbed: its parked task then receives
 * the parent's value. Bounded: the child must exit within 20 s.
 * Under TSan the child makes no thread (TSan cannot start threads after a
 * multi-threaded fork), so the checks run only without it. */
#define _GNU_SOURCE
#include "check.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#ifdef UNDER_TSAN
static const bool under_tsan = true;
#else
static const bool under_tsan = false;
#endif

static struct canal_chan *ch;
static _Atomic int receiving;
static uint32_t parent_got;

static void pause_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

static void receiver_task(void *arg)
{
	(void)arg;
	atomic_store(&receiving, 1);
	CHECK_EQ(canal_recv(ch, &parent_got), 0);
}

static void parent_main(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_spawn(receiver_task, NULL), 0);
}

static void *runtime_thread(void *arg)
{
	(void)arg;
	struct canal_run_options o = {.loops = 2};
	CHECK_EQ(canal_run(parent_main, NULL, &o), 0);
	return NULL;
}

static void nothing(void *arg)
{
	*(int *)arg = 1;
}

static void *child_receiver(void *arg)
{
	uint32_t *v = arg;
	CHECK_EQ(canal_recv(ch, v), 0);
	return NULL;
}

static int child(void)
{
	if (under_tsan)
		return 0;
	/* 2: a receiving thread of the child, asleep on the channel. */
	uint32_t v = 0;
	pthread_t th = spawn(child_receiver, &v);
	pause_ms(50);
	uint32_t seven = 7;
	CHECK_EQ(canal_send(ch, &seven), 0);
	join(th);
	CHECK_EQ(v, 7);
	/* 1: a runtime of the child's own. */
	int ran = 0;
	struct canal_run_options o = {.loops = 1, .detach_threads = 1};
	int r = canal_run(nothing, &ran, &o);
	if (r != 0) {
		fprintf(stderr, "child: canal_run returned %d\n", r);
		return 1;
	}
	CHECK_EQ(ran, 1);
	return 0;
}

int main(void)
{
	ch = canal_chan_create(sizeof(uint32_t), 1, 0);
	CHECK(ch != NULL);
	pthread_t rt = spawn(runtime_thread, NULL);
	while (!atomic_load(&receiving))
		pause_ms(1);
	pause_ms(50); /* the task parks in its receive */
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(child());
	int status = 0;
	pid_t w = 0;
	for (int i = 0; i < 2000 && w == 0; i++) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == 0)
			pause_ms(10);
	}
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fprintf(stderr, "the child hung (a wake-up lost to the "
				"parent's parked task)\n");
		abort();
	}
	CHECK_EQ(w, pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	uint32_t v = 42;
	CHECK_EQ(canal_send(ch, &v), 0);
	join(rt);
	CHECK_EQ(parent_got, 42);
	canal_chan_destroy(ch);
	if (under_tsan)
		printf("fork during a run: parent undisturbed (the child's "
		       "checks need threads: not under TSan)\n");
	else
		printf("fork during a run: the child ran its own runtime and "
		       "its threads' channel wake-ups; parent undisturbed\n");
	return 0;
}
