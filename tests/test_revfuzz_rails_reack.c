/* test_revfuzz_rails_reack - (review) rails.c: a duplicate packet must be
 * acknowledged again. When a rail fails, the sender sends every
 * unacknowledged packet again on the rails left; if the receiver already
 * had them (the acknowledgement was lost with the rail), it dropped them
 * as duplicates without counting them towards its next acknowledgement
 * (since_ack), so it never acknowledged again: the sender's packets stayed
 * unacknowledged for ever, its idle() false (the aggregate strategy holds
 * a lone message until idle(); the progress thread always has work; close
 * waits out its whole flush limit). Two rails drivers joined by fake rails
 * (in-memory queues): A sends one packet, B takes it and acknowledges it,
 * the acknowledgement is lost, rail 0 breaks both ways; A must become
 * idle. Hang guard: 10 s. */
#define _GNU_SOURCE
#include "check.h"
#include "../src/engine/transfer/driver.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QMAX 64

struct queue {
	unsigned char pkt[QMAX][128];
	size_t len[QMAX];
	int head, n;
	bool lose; /* packets put on it vanish */
};

struct fake {
	struct canal__driver base;
	struct queue *out, *in;
	bool *broken; /* the link, both ways */
};

static int f_send(struct canal__driver *d, const struct iovec *v, int n,
		  size_t total)
{
	struct fake *f = (struct fake *)d;
	if (*f->broken)
		return -ECONNRESET;
	if (f->out->lose)
		return 0;
	if (f->out->n == QMAX || total > 128)
		return -EAGAIN;
	int i = (f->out->head + f->out->n) % QMAX;
	size_t off = 0;
	for (int k = 0; k < n; k++) {
		memcpy(f->out->pkt[i] + off, v[k].iov_base, v[k].iov_len);
		off += v[k].iov_len;
	}
	f->out->len[i] = total;
	f->out->n++;
	return 0;
}
static int f_flush(struct canal__driver *d)
{
	return *((struct fake *)d)->broken ? -ECONNRESET : 0;
}
static int f_recv(struct canal__driver *d, const unsigned char **pkt,
		  size_t *len)
{
	struct fake *f = (struct fake *)d;
	if (*f->broken)
		return -ECONNRESET;
	if (!f->in->n)
		return 0;
	*pkt = f->in->pkt[f->in->head];
	*len = f->in->len[f->in->head];
	return 1;
}
static void f_release(struct canal__driver *d)
{
	struct fake *f = (struct fake *)d;
	f->in->head = (f->in->head + 1) % QMAX;
	f->in->n--;
}
static bool f_buffered(struct canal__driver *d)
{
	return ((struct fake *)d)->in->n > 0;
}
static bool f_idle(struct canal__driver *d)
{
	(void)d;
	return true;
}
static int f_health(struct canal__driver *d)
{
	(void)d;
	return 0;
}
static void f_close(struct canal__driver *d)
{
	(void)d;
}
static const struct canal__driver_ops fake_ops = {
	.name = "fake", .send = f_send, .flush = f_flush, .recv = f_recv,
	.release = f_release, .buffered = f_buffered, .idle = f_idle,
	.health = f_health, .close = f_close,
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Every packet d hands out is released; returns how many. */
static int drain(struct canal__driver *d)
{
	const unsigned char *p;
	size_t len;
	int got = 0, r;
	while ((r = d->ops->recv(d, &p, &len)) == 1) {
		CHECK_EQ(len, 5u);
		CHECK(!memcmp(p, "hello", 5));
		got++;
		d->ops->release(d);
	}
	CHECK(r == 0 || r == -ECONNRESET);
	return got;
}

int main(void)
{
	static struct queue ab[2], ba[2];
	static bool broken[2];
	static struct fake fa[2], fb[2];
	struct canal__driver *sa[2], *sb[2];
	for (int r = 0; r < 2; r++) {
		fa[r] = (struct fake){ .out = &ab[r], .in = &ba[r],
				       .broken = &broken[r] };
		fb[r] = (struct fake){ .out = &ba[r], .in = &ab[r],
				       .broken = &broken[r] };
		struct fake *f[2] = { &fa[r], &fb[r] };
		for (int k = 0; k < 2; k++) {
			f[k]->base.ops = &fake_ops;
			f[k]->base.caps.max_packet = 128;
			f[k]->base.caps.eager_max = 64;
			f[k]->base.peer_pid = 1;
		}
		sa[r] = &fa[r].base;
		sb[r] = &fb[r].base;
	}
	struct canal__driver *a, *b;
	CHECK_EQ(canal__rails_new(sa, 2, &a), 0);
	CHECK_EQ(canal__rails_new(sb, 2, &b), 0);

	/* A sends one packet; B takes it. */
	struct iovec v = { "hello", 5 };
	CHECK_EQ(a->ops->send(a, &v, 1, 5), 0);
	CHECK(!a->ops->idle(a));
	CHECK_EQ(drain(b), 1);
	/* B's acknowledgement (sent once its delay has passed) is lost. */
	ba[0].lose = ba[1].lose = true;
	double t0 = now_s();
	while (!b->ops->idle(b) && now_s() - t0 < 10)
		CHECK_EQ(b->ops->flush(b), 0);
	CHECK(b->ops->idle(b));
	ba[0].lose = ba[1].lose = false;
	/* Rail 0 breaks: A sends the packet again on rail 1, B drops it as a
	 * duplicate; B must acknowledge again, so that A becomes idle. */
	broken[0] = true;
	int delivered = 1;
	t0 = now_s();
	while (now_s() - t0 < 10) {
		int e = a->ops->flush(a);
		CHECK(e == 0);
		CHECK_EQ(drain(a), 0); /* acknowledgements only */
		delivered += drain(b);
		CHECK_EQ(b->ops->flush(b), 0);
		if (a->ops->idle(a) && b->ops->idle(b))
			break;
	}
	CHECK_EQ(delivered, 1); /* once, not again */
	if (!a->ops->idle(a)) {
		fprintf(stderr, "test_revfuzz_rails_reack: the sender's packet "
			"was never acknowledged again after its rail failed\n");
		return 1;
	}
	unsigned long long bytes;
	bool dead;
	CHECK_EQ(canal__rails_info(a, 0, &bytes, &dead), 2);
	CHECK(dead);
	a->ops->close(a);
	b->ops->close(b);
	printf("test_revfuzz_rails_reack: ok\n");
	return 0;
}
