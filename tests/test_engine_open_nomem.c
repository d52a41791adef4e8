/*
 * test_engine_open_nomem - canal_engine_open running out of memory while
 * it sets up its gates returns -ENOMEM and frees what it made.
 *
 * Defect (the engine review's helper, 2026-11-30): the gates are set up
 * one after another (session.c); when one fails, those after it are left
 * zeroed, and the session's cleanup dropped every gate's queues
 * (canal__sched_gate_drop), walking the never-initialized lists of the
 * zeroed ones: a NULL dereference, the process killed instead of an error.
 *
 * A child bounds its address space (RLIMIT_AS) and opens a session of
 * CANAL_ENGINE_SIZE_MAX ranks (65 536; 100 000 before that bound): the
 * limit leaves room for the gate array and the one mapping of every
 * gate's sequence numbers (collect.h), and for about half of the gates'
 * matching tables (two small hash tables each), so the gates' set-up
 * fails part way. Under a sanitizer the test is skipped (77): their
 * allocators cannot work under such a limit.
 */
#include "check.h"

#include <canal/engine.h>

#include "../src/engine/collect/collect.h"

#include <sys/resource.h>
#include <sys/wait.h>


/* This process's address space, bytes (/proc/self/statm's first field). */
static unsigned long long vm_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	CHECK(f);
	unsigned long long pages = 0;
	CHECK(fscanf(f, "%llu", &pages) == 1);
	fclose(f);
	return pages * (unsigned long long)sysconf(_SC_PAGESIZE);
}

int main(void)
{
#ifdef SANITIZED
	printf("test_engine_open_nomem: skipped (sanitizer build)\n");
	return 77;
#endif
	char dir[] = "/tmp/canal-test-nomem.XXXXXX";
	CHECK(mkdtemp(dir));
	fflush(stdout);
	pid_t c = test_fork();
	CHECK(c >= 0);
	if (c == 0) {
		alarm(60);
		unsigned long long n = CANAL_ENGINE_SIZE_MAX;
		unsigned long long lim =
			vm_bytes() + n * CANAL__COLLECT_SEQ_WORDS * 4 +
			n * sizeof(struct canal__gate) + n * 256 + (8ull << 20);
		struct rlimit rl = { lim, lim };
		CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
		struct canal_engine_options o;
		canal_engine_options_init(&o);
		o.rank = 0;
		o.size = CANAL_ENGINE_SIZE_MAX;
		o.dir = dir;
		o.driver = "tcp";
		o.connect_timeout_ms = 1000;
		struct canal_engine *e = NULL;
		int err = canal_engine_open(&o, &e);
		fprintf(stderr, "open of %d ranks under a %llu MiB "
				"address space: %d (%s)\n",
			CANAL_ENGINE_SIZE_MAX, lim >> 20, err, strerror(-err));
		_exit(err == -ENOMEM ? 0 : 1);
	}
	int st;
	CHECK(waitpid(c, &st, 0) == c);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	if (WIFSIGNALED(st))
		fprintf(stderr, "the open was killed by signal %d\n",
			WTERMSIG(st));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	TEST_DONE("test_engine_open_nomem");
}
