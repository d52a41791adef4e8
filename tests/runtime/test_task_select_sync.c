/* test_task_select_sync.c - selects on both sides of synchronous channels
 * (capacity 0): S senders each select-send over the same C channels, R
 * receivers each select-receive over them, in tasks (two loops) and in
 * threads, many rounds. Checks that every message arrives exactly once
 * and that every channel is empty at the end (no order across channels is
 * promised: an element left as an orphan is taken later); a lost element
 * or wake-up shows as a hang, which CTest's timeout turns into a failure. Before the fix (select.c, sendrecv.c: a committed select
 * receive re-checks at each slice), about 1 round in 40-100 hung with
 * tasks on io_uring: a receiver waited for ever on one channel while the
 * element counted for it sat on another as an orphan. */
#include "check.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <stdbool.h>
#include <stdint.h>

#define S 4
#define R 4
#define C 4
#define PER 500 /* messages per sender; a multiple of R / S */

static int rounds(void)
{
	return getenv("CANAL_STRESS") ? 2000 : 150;
}

struct world {
	struct canal_chan *ch[C];
	struct canal_chan *done; /* tasks: workers say they ended */
	_Atomic uint32_t seen[S][PER];
};

struct worker {
	struct world *w;
	int id;
	bool sender;
};

static void run_sender(struct world *w, int id)
{
	struct canal_case cs[C];
	uint64_t v;
	for (int k = 0; k < C; k++)
		cs[k] = (struct canal_case){ .ch = w->ch[k],
					     .op = CANAL_OP_SEND,
					     .elt = &v };
	for (uint64_t i = 0; i < PER; i++) {
		v = (uint64_t)id << 32 | i;
		int idx = canal_select(cs, C, -1, 0);
		CHECK(idx >= 0 && idx < C);
		CHECK_EQ(cs[idx].result, 0);
	}
}

static void run_receiver(struct world *w)
{
	struct canal_case cs[C];
	uint64_t v;
	for (int k = 0; k < C; k++)
		cs[k] = (struct canal_case){ .ch = w->ch[k],
					     .op = CANAL_OP_RECV,
					     .elt = &v };
	for (int i = 0; i < S * PER / R; i++) {
		int idx = canal_select(cs, C, -1, 0);
		CHECK(idx >= 0 && idx < C);
		CHECK_EQ(cs[idx].result, 0);
		uint32_t s = (uint32_t)(v >> 32), seq = (uint32_t)v;
		CHECK(s < S && seq < PER);
		CHECK_EQ(atomic_fetch_add(&w->seen[s][seq], 1), 0);
	}
}

static void worker_body(struct worker *k)
{
	if (k->sender)
		run_sender(k->w, k->id);
	else
		run_receiver(k->w);
}

static void worker_task(void *arg)
{
	struct worker *k = arg;
	worker_body(k);
	CHECK_EQ(canal_send(k->w->done, NULL), 0);
}

static void *worker_thread(void *arg)
{
	worker_body(arg);
	return NULL;
}

static void main_task(void *arg)
{
	struct world *w = arg;
	struct worker ks[S + R];
	for (int i = 0; i < S + R; i++) {
		ks[i] = (struct worker){ .w = w, .id = i < S ? i : i - S,
					 .sender = i < S };
		CHECK_EQ(canal_spawn(worker_task, &ks[i]), 0);
	}
	for (int i = 0; i < S + R; i++)
		CHECK_EQ(canal_recv(w->done, NULL), 0);
}

static void one_round(struct world *w, bool tasks)
{
	memset(w->seen, 0, sizeof w->seen);
	for (int k = 0; k < C; k++) {
		w->ch[k] = canal_chan_create(sizeof(uint64_t), 0, 0);
		CHECK(w->ch[k]);
	}
	if (tasks) {
		/* The done channel outlives canal_run: a worker's last send
		 * may still be inside canal_send when main_task returns. */
		w->done = canal_chan_create(0, S + R, 0);
		CHECK(w->done);
		struct canal_run_options o = { .loops = 2 };
		CHECK_EQ(canal_run(main_task, w, &o), 0);
		canal_chan_destroy(w->done);
	} else {
		pthread_t t[S + R];
		struct worker ks[S + R];
		for (int i = 0; i < S + R; i++) {
			ks[i] = (struct worker){ .w = w,
						 .id = i < S ? i : i - S,
						 .sender = i < S };
			t[i] = spawn(worker_thread, &ks[i]);
		}
		for (int i = 0; i < S + R; i++)
			pthread_join(t[i], NULL);
	}
	for (int s = 0; s < S; s++)
		for (int i = 0; i < PER; i++)
			CHECK_EQ(atomic_load(&w->seen[s][i]), 1);
	for (int k = 0; k < C; k++) {
		CHECK_EQ(canal_chan_len(w->ch[k]), 0);
		canal_chan_destroy(w->ch[k]);
	}
}

int main(void)
{
	static struct world w;
	int n = rounds();
	for (int r = 0; r < n; r++) {
		one_round(&w, true);
		if (r % 4 == 0)
			one_round(&w, false);
	}
	printf("test_task_select_sync: %d rounds with tasks, %d with threads: ok\n",
	       n, (n + 3) / 4);
	return 0;
}
