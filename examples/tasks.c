/* tasks.c - lightweight tasks: 10 000 workers parked on one channel, fed
 * by a producer task; each worker sums what it gets and reports through a
 * results channel. Blocking channel operations park the task, not the
 * thread, so 10 000 workers cost 10 000 small stacks on a few threads.
 * Build: cc tasks.c $(pkg-config --cflags --libs canal) -o tasks */
#include <canal/channel.h>
#include <canal/task.h>

#include <stdio.h>

#define WORKERS 10000
#define JOBS 1000000

static struct canal_chan *jobs, *results;

static void worker(void *arg)
{
	unsigned long job, sum = 0;
	(void)arg;
	while (canal_recv(jobs, &job) == 0) /* parks while there is no job */
		sum += job;
	canal_send(results, &sum);
}

static void producer(void *arg)
{
	(void)arg;
	for (unsigned long i = 1; i <= JOBS; i++)
		canal_send(jobs, &i);
	canal_close(jobs); /* workers drain, then get -EPIPE */
}

static void main_task(void *arg)
{
	unsigned long *total = arg, sum;
	for (int i = 0; i < WORKERS; i++)
		if (canal_spawn(worker, NULL) != 0)
			return;
	canal_spawn(producer, NULL);
	for (int i = 0; i < WORKERS; i++) {
		canal_recv(results, &sum);
		*total += sum;
	}
}

int main(void)
{
	unsigned long total = 0;
	jobs = canal_chan_create(sizeof(unsigned long), 64, 0);
	results = canal_chan_create(sizeof(unsigned long), 64, 0);
	if (!jobs || !results)
		return 1;
	/* NULL options: one loop per CPU, 256 KiB stacks committed on
	 * demand, io_uring (or epoll where it is unavailable). */
	int r = canal_run(main_task, &total, NULL);
	if (r != 0) {
		fprintf(stderr, "canal_run: %s\n", canal_strerror(r));
		return 1;
	}
	printf("%d workers summed 1..%d: %lu (expected %lu)\n", WORKERS, JOBS,
	       total, (unsigned long)JOBS * (JOBS + 1) / 2);
	canal_chan_destroy(jobs);
	canal_chan_destroy(results);
	return total == (unsigned long)JOBS * (JOBS + 1) / 2 ? 0 : 1;
}
