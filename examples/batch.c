/* batch.c - send and receive in batches: one atomic claim moves many
 * elements, which is what makes small messages cheap. The producer sends
 * arrays of BATCH elements; the consumer takes whatever is there, up to
 * BATCH at a time, and checks that nothing was lost, doubled or reordered.
 * Build: cc batch.c $(pkg-config --cflags --libs canal) -o batch */
#include <canal/channel.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define BATCH 64
#define TOTAL (1000 * BATCH)

static struct canal_chan *ch;

static void *producer(void *arg)
{
	uint64_t buf[BATCH];
	(void)arg;
	for (uint64_t next = 0; next < TOTAL; next += BATCH) {
		for (int i = 0; i < BATCH; i++)
			buf[i] = next + i;
		/* Blocks until all BATCH are in; fewer only if ch was closed. */
		ssize_t n = canal_send_batch(ch, buf, BATCH);
		if (n != BATCH) {
			fprintf(stderr, "send_batch: %s\n", n < 0 ? canal_strerror((int)n) : "short");
			break;
		}
	}
	canal_close(ch); /* the consumer drains what is left, then gets -EPIPE */
	return NULL;
}

int main(void)
{
	uint64_t buf[BATCH], expect = 0;
	long batches = 0;
	ssize_t n;
	pthread_t t;

	ch = canal_chan_create(sizeof(uint64_t), 1024, 0);
	if (!ch) {
		perror("canal_chan_create");
		return 1;
	}
	pthread_create(&t, NULL, producer, NULL);
	/* Returns as soon as one element is there, with up to BATCH of them. */
	while ((n = canal_recv_batch(ch, buf, BATCH)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != expect++) {
				fprintf(stderr, "got %llu, expected %llu\n",
					(unsigned long long)buf[i], (unsigned long long)expect - 1);
				return 1;
			}
		batches++;
	}
	pthread_join(t, NULL);
	canal_chan_destroy(ch);
	if (n != -EPIPE || expect != TOTAL) {
		fprintf(stderr, "ended with %s after %llu elements\n", canal_strerror((int)n),
			(unsigned long long)expect);
		return 1;
	}
	printf("%llu elements in order, in %ld receive calls (%.1f per call)\n",
	       (unsigned long long)expect, batches, (double)expect / batches);
	return 0;
}
