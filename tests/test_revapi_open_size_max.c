/* test_revapi_open_size_max - (review of engine.h against the code) a
 * session size above CANAL_ENGINE_SIZE_MAX is refused with -EINVAL at
 * once, as $CANAL_SIZE above it already was.
 *
 * The environment's size was bounded (2^20 ranks) but opt.size was
 * taken as given, and the session's per-gate tables (two 256 KiB callocs
 * each) made 2^20 + 1 ranks take 24 GB and the OOM killer on this 24 GB
 * machine (65 536 ranks: 9.2 GB resident, 13 s; the tables are now one
 * mapping, 58 MB and 0.1 s, collect.h).
 * Expected: -EINVAL for CANAL_ENGINE_SIZE_MAX + 1 and INT_MAX, from
 * opt.size and from $CANAL_SIZE alike. Single process, TCP, lazy
 * connection, no timing. */
#include "check.h"

#include <limits.h>

#include <canal/engine.h>

static int open_size(int size, const char *env)
{
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = 0;
	o.size = size;
	o.driver = "tcp";
	o.connect = "lazy";
	o.connect_timeout_ms = 100;
	char dir[] = "/tmp/canal-test-size.XXXXXX";
	CHECK(mkdtemp(dir));
	o.dir = dir;
	if (env)
		setenv("CANAL_SIZE", env, 1);
	struct canal_engine *e = NULL;
	int err = canal_engine_open(&o, &e);
	unsetenv("CANAL_SIZE");
	if (err == 0)
		canal_engine_close(e);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
	return err;
}

int main(void)
{
	CHECK_EQ(open_size(CANAL_ENGINE_SIZE_MAX + 1, NULL), -EINVAL);
	CHECK_EQ(open_size(INT_MAX, NULL), -EINVAL);
	char v[16];
	snprintf(v, sizeof v, "%d", CANAL_ENGINE_SIZE_MAX + 1);
	CHECK_EQ(open_size(0, v), -EINVAL);
	TEST_DONE("test_revapi_open_size_max");
}
