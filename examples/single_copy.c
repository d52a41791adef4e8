/* single_copy.c - large messages written and read in place: the sender
 * reserves a slot of the channel and fills it, the receiver borrows the
 * slot and reads it there. Each message is copied once (by the code that
 * makes it), instead of into the channel and out again.
 * Build: cc single_copy.c $(pkg-config --cflags --libs canal) -o single_copy */
#include <canal/channel.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MESSAGES 20000

struct frame {
	uint64_t seq;
	uint32_t len;
	uint32_t checksum;
	unsigned char payload[4096];
};

static struct canal_chan *ch;

static uint32_t checksum(const unsigned char *p, uint32_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (uint32_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static void *producer(void *arg)
{
	struct canal_slot slot;
	(void)arg;
	for (uint64_t seq = 0; seq < MESSAGES; seq++) {
		if (canal_send_reserve(ch, &slot) != 0)
			break; /* closed */
		struct frame *f = slot.data; /* write the message in place */
		f->seq = seq;
		f->len = 64 + (uint32_t)(seq % (sizeof(f->payload) - 64));
		memset(f->payload, (int)(seq & 0xff), f->len);
		f->checksum = checksum(f->payload, f->len);
		canal_send_commit(ch, &slot); /* now the receiver may see it */
	}
	canal_close(ch);
	return NULL;
}

int main(void)
{
	struct canal_slot slot;
	uint64_t expect = 0;
	pthread_t t;
	int err;

	ch = canal_chan_create(sizeof(struct frame), 32, 0);
	if (!ch) {
		perror("canal_chan_create");
		return 1;
	}
	pthread_create(&t, NULL, producer, NULL);
	while ((err = canal_recv_borrow(ch, &slot)) == 0) {
		const struct frame *f = slot.data; /* read in place */
		int ok = f->seq == expect && checksum(f->payload, f->len) == f->checksum;
		canal_recv_release(ch, &slot); /* f is invalid from here on */
		if (!ok) {
			fprintf(stderr, "message %llu damaged or out of order\n",
				(unsigned long long)expect);
			return 1;
		}
		expect++;
	}
	pthread_join(t, NULL);
	canal_chan_destroy(ch);
	if (err != -EPIPE || expect != MESSAGES) {
		fprintf(stderr, "%s after %llu messages\n", canal_strerror(err),
			(unsigned long long)expect);
		return 1;
	}
	printf("%llu messages of up to %zu bytes, each written and read in place\n",
	       (unsigned long long)expect, sizeof(((struct frame *)0)->payload));
	return 0;
}
