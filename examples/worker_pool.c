/* worker_pool.c - a pool of worker threads fed by one job channel. Each
 * worker waits with canal_select() on two things at once, a job or the
 * "stop" channel, with a timeout so that an idle worker can do
 * housekeeping; the main thread gives up on a result that takes too long.
 * Closing "stop" is a broadcast: every worker sees it at once.
 * Build: cc worker_pool.c $(pkg-config --cflags --libs canal) -o worker_pool */
#include <canal/channel.h>

#include <pthread.h>
#include <stdio.h>

#define WORKERS 4
#define JOBS 10000
#define MS 1000000LL /* nanoseconds */

struct job {
	long id;
	long input;
};

struct result {
	long id;
	long output;
	int worker;
};

static struct canal_chan *jobs, *results, *stop;

static void *worker(void *arg)
{
	int me = (int)(long)arg, idle = 0;
	struct job job;
	char dummy;

	for (;;) {
		struct canal_case cases[2] = {
			{ .ch = jobs, .op = CANAL_OP_RECV, .elt = &job },
			{ .ch = stop, .op = CANAL_OP_RECV, .elt = &dummy },
		};
		int i = canal_select(cases, 2, 100 * MS, 0);
		if (i == -ETIMEDOUT) { /* nothing for 100 ms */
			idle++;
			continue;
		}
		if (i < 0) {
			fprintf(stderr, "worker %d: %s\n", me, canal_strerror(i));
			break;
		}
		if (i == 1 || cases[0].result == -EPIPE)
			break; /* stop was closed, or no more jobs will come */
		struct result r = { job.id, job.input * job.input, me };
		if (canal_send_timeout(results, &r, 1000 * MS) < 0) {
			fprintf(stderr, "worker %d: nobody collects results\n", me);
			break;
		}
	}
	if (idle)
		printf("worker %d was idle %d times\n", me, idle);
	return NULL;
}

int main(void)
{
	pthread_t threads[WORKERS];
	long done_by[WORKERS] = { 0 };
	long long sum = 0, expect = 0;
	int err = 0;

	jobs = canal_chan_create(sizeof(struct job), 64, 0);
	results = canal_chan_create(sizeof(struct result), 64, 0);
	stop = canal_chan_create(1, 1, 0);
	if (!jobs || !results || !stop) {
		perror("canal_chan_create");
		return 1;
	}
	for (long i = 0; i < WORKERS; i++)
		pthread_create(&threads[i], NULL, worker, (void *)i);

	/* Send every job and collect every result, whichever can progress:
	 * a select with a send case (while jobs remain) and a receive case. */
	long sent = 0, received = 0;
	struct job next = { 0, 0 };
	while (received < JOBS) {
		struct result r;
		struct canal_case cases[2] = {
			{ .ch = sent < JOBS ? jobs : NULL, .op = CANAL_OP_SEND, .elt = &next },
			{ .ch = results, .op = CANAL_OP_RECV, .elt = &r },
		};
		int i = canal_select(cases, 2, 2000 * MS, 0);
		if (i == 0) {
			expect += (long long)next.input * next.input;
			sent++;
			next.id = sent;
			next.input = sent % 1000;
		} else if (i == 1) {
			sum += r.output;
			done_by[r.worker]++;
			received++;
		} else {
			fprintf(stderr, "main: %s after %ld results\n", canal_strerror(i), received);
			err = 1;
			break;
		}
	}
	canal_close(stop); /* wakes every worker */
	for (int i = 0; i < WORKERS; i++)
		pthread_join(threads[i], NULL);
	for (int i = 0; i < WORKERS; i++)
		printf("worker %d did %ld jobs\n", i, done_by[i]);
	printf("%ld results, sum %lld (%s)\n", received, sum, sum == expect ? "ok" : "WRONG");
	canal_chan_destroy(jobs);
	canal_chan_destroy(results);
	canal_chan_destroy(stop);
	return err || sum != expect;
}
