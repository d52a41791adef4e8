/* named_server.c - one of two unrelated programs talking over a named
 * shared channel (see named_client.c). The server creates the channel
 * "/<name>", receives requests until the clients close it, and removes the
 * name at the end. Run: ./named_server NAME & ./named_client NAME
 * Build: cc named_server.c $(pkg-config --cflags --libs canal) -o named_server */
#include <canal/channel.h>

#include <stdio.h>

#include "named_message.h"

int main(int argc, char **argv)
{
	struct canal_chan *ch;
	struct request req;
	long count = 0;
	long long sum = 0;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: %s NAME\n", argv[0]);
		return 2;
	}
	err = canal_chan_create_named(argv[1], sizeof(struct request), 128,
				      CANAL_SHARED, 0600, &ch);
	if (err) {
		fprintf(stderr, "create %s: %s\n", argv[1], canal_strerror(err));
		return 1;
	}
	/* Give up if no client talks for 10 s, rather than wait forever. */
	while ((err = canal_recv_timeout(ch, &req, 10000000000LL)) == 0) {
		if (req.seq != count) {
			fprintf(stderr, "request %ld arrived as %ld\n", count, req.seq);
			break;
		}
		sum += req.value;
		count++;
	}
	canal_chan_unlink(argv[1]); /* the name goes; the memory with the last user */
	canal_chan_destroy(ch);
	if (err != -EPIPE) { /* -EPIPE: closed by the client and drained */
		fprintf(stderr, "server: %s after %ld requests\n", canal_strerror(err), count);
		return 1;
	}
	printf("server: %ld requests, sum %lld (%s)\n", count, sum,
	       sum == named_expected_sum(count) ? "ok" : "WRONG");
	return count == NAMED_REQUESTS && sum == named_expected_sum(count) ? 0 : 1;
}
