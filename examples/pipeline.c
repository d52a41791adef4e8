/* pipeline.c - a producer, a worker pool and a collector joined by canal
 * channels; closing a channel tells the next stage that input is over.
 * Build: cc pipeline.c $(pkg-config --cflags --libs canal) -o pipeline */
#include <canal/channel.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKERS 4
#define JOBS 100000

static struct canal_chan *jobs, *results;

static void *worker(void *arg)
{
	long n;
	(void)arg;
	while (canal_recv(jobs, &n) == 0) { /* -EPIPE: closed and drained */
		long sq = n * n;
		canal_send(results, &sq);
	}
	return NULL;
}

int main(void)
{
	pthread_t w[WORKERS];
	jobs = canal_chan_create(sizeof(long), 256, 0);
	results = canal_chan_create(sizeof(long), 256, 0);
	if (!jobs || !results) {
		perror("canal_chan_create");
		return 1;
	}
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&w[i], NULL, worker, NULL);

	long long sum = 0;
	long next = 0, received = 0;
	while (received < JOBS) {
		/* send the next job or collect a result, whichever is ready */
		long r;
		struct canal_case cases[2] = {
			{ .ch = next < JOBS ? jobs : NULL, .op = CANAL_OP_SEND, .elt = &next },
			{ .ch = results, .op = CANAL_OP_RECV, .elt = &r },
		};
		int i = canal_select(cases, 2, -1, 0);
		if (i == 0) {
			if (++next == JOBS)
				canal_close(jobs);
		} else if (i == 1) {
			sum += r;
			received++;
		} else {
			fprintf(stderr, "select: %s\n", canal_strerror(i));
			return 1;
		}
	}
	for (int i = 0; i < WORKERS; i++)
		pthread_join(w[i], NULL);
	long long expect = 0;
	for (long n = 0; n < JOBS; n++)
		expect += (long long)n * n;
	printf("sum of squares below %d: %lld (%s)\n", JOBS, sum,
	       sum == expect ? "ok" : "WRONG");
	canal_chan_destroy(jobs);
	canal_chan_destroy(results);
	return sum == expect ? 0 : 1;
}
