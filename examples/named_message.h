/* named_message.h - what named_server.c and named_client.c agree on: the
 * message layout (the channel's element) and the request count. Two
 * programs sharing a channel must agree on the element size;
 * canal_chan_open() checks it (-ERANGE when it differs). */
#ifndef NAMED_MESSAGE_H
#define NAMED_MESSAGE_H

#define NAMED_REQUESTS 100000

struct request {
	long seq;
	long value;
};

static inline long long named_expected_sum(long count)
{
	long long sum = 0;
	for (long i = 0; i < count; i++)
		sum += i % 977;
	return sum;
}

#endif
