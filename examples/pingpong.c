/* pingpong.c - two threads bounce a counter over two synchronous channels
 * (capacity 0: each send waits for the receiver) and time the round trip.
 * Build: cc pingpong.c $(pkg-config --cflags --libs canal) -o pingpong */
#include <canal/channel.h>

#include <pthread.h>
#include <stdio.h>

#define ROUNDS 100000

static struct canal_chan *ping, *pong;

static void *responder(void *arg)
{
	unsigned long v;
	(void)arg;
	while (canal_recv(ping, &v) == 0) {
		v++;
		canal_send(pong, &v);
	}
	return NULL;
}

int main(void)
{
	pthread_t t;
	ping = canal_chan_create(sizeof(unsigned long), 0, 0);
	pong = canal_chan_create(sizeof(unsigned long), 0, 0);
	if (!ping || !pong)
		return 1;
	pthread_create(&t, NULL, responder, NULL);
	unsigned long v = 0;
	uint64_t t0 = canal_now_ns();
	for (int i = 0; i < ROUNDS; i++) {
		canal_send(ping, &v);
		canal_recv(pong, &v);
	}
	uint64_t ns = canal_now_ns() - t0;
	canal_close(ping);
	pthread_join(t, NULL);
	printf("%lu round trips, %.0f ns each\n", v, (double)ns / ROUNDS);
	canal_chan_destroy(ping);
	canal_chan_destroy(pong);
	return v == ROUNDS ? 0 : 1;
}
