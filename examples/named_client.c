/* named_client.c - opens the channel that named_server.c created by name,
 * sends its requests and closes the channel to say it is done. It retries
 * the open for a while: the server may not have created the name yet.
 * Build: cc named_client.c $(pkg-config --cflags --libs canal) -o named_client */
#include <canal/channel.h>

#include <stdio.h>
#include <time.h>

#include "named_message.h"

int main(int argc, char **argv)
{
	struct canal_chan *ch = NULL;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: %s NAME\n", argv[0]);
		return 2;
	}
	/* -ENOENT: not created yet; -EAGAIN: being created. Try for 5 s. */
	for (int tries = 0; tries < 500; tries++) {
		err = canal_chan_open(argv[1], sizeof(struct request), CANAL_ANY,
				      CANAL_SHARED, &ch);
		if (err != -ENOENT && err != -EAGAIN)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	}
	if (err) {
		fprintf(stderr, "open %s: %s\n", argv[1], canal_strerror(err));
		return 1;
	}
	for (long i = 0; i < NAMED_REQUESTS; i++) {
		struct request req = { .seq = i, .value = i % 977 };
		err = canal_send(ch, &req);
		if (err) {
			fprintf(stderr, "send: %s\n", canal_strerror(err));
			break;
		}
	}
	canal_close(ch); /* the server drains, then sees -EPIPE */
	canal_chan_destroy(ch);
	printf("client: sent %d requests\n", NAMED_REQUESTS);
	return err ? 1 : 0;
}
