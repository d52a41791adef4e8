/* test_revapi_base.c - base.h's promises, table-driven: canal_now_ns is
 * monotonic, and canal_strerror describes every error code that a public
 * header names (the headers under include/canal: the channel, runtime, engine and remote
 * channel errors), never "unknown error", never NULL.
 *
 * Failed before its fix with: canal_strerror(-EBUSY) (canal_run,
 * canal_remote_open, canal_io_*), -EPROTO (the engine's malformed-frame
 * error, and remote.c's own "why" sentence), -EMSGSIZE (isend, receives)
 * and -EADDRNOTAVAIL (canal_engine_open's bind list) said "unknown
 * error". */
#include "check.h"

#include <canal/base.h>

static void test_strerror_covers_headers(void)
{
	/* Every -E... named in include/canal/{base,channel,task,engine,
	 * remote}.h (grep -oh '\-E[A-Z]\+' include/canal/ *.h | sort -u). */
	static const int documented[] = {
		-EACCES,     -EADDRNOTAVAIL, -EAGAIN,     -EALREADY,
		-EBADF,      -EBADMSG,       -EBUSY,      -ECANCELED,
		-ECONNABORTED, -ECONNRESET,  -EEXIST,     -EINVAL,
		-EIO,        -EMFILE,        -EMSGSIZE,   -ENFILE,
		-ENOENT,     -ENOMEM,        -ENOSPC,     -ENOSYS,
		-ENOTSOCK,   -ENOTSUP,       -EOPNOTSUPP, -EOWNERDEAD,
		-EPERM,      -EPIPE,         -EPROTO,     -EPROTONOSUPPORT,
		-ERANGE,     -ETIMEDOUT,
	};
	int unknown = 0;
	for (size_t i = 0; i < sizeof(documented) / sizeof(documented[0]);
	     i++) {
		const char *s = canal_strerror(documented[i]);
		CHECK(s != NULL);
		if (strcmp(s, "unknown error") == 0) {
			fprintf(stderr, "canal_strerror(%d) (%s): unknown\n",
				documented[i], strerror(-documented[i]));
			unknown++;
		}
	}
	CHECK_EQ(unknown, 0);
	/* What is not an error code of canal's. */
	CHECK(strcmp(canal_strerror(-12345), "unknown error") == 0);
	CHECK(strcmp(canal_strerror(12345), "unknown error") == 0);
	CHECK(canal_strerror(INT32_MIN) != NULL);
	CHECK(strcmp(canal_strerror(0), "success") == 0);
}

static void test_now_monotonic(void)
{
	uint64_t a = canal_now_ns();
	for (int i = 0; i < 1000; i++) {
		uint64_t b = canal_now_ns();
		CHECK(b >= a);
		a = b;
	}
	CHECK(a > 0);
}

int main(void)
{
	alarm(10); /* a hang is a failure */
	test_strerror_covers_headers();
	test_now_monotonic();
	TEST_DONE("test_revapi_base");
}
