/* test_revauth_key_fifo - (review) a key_file that is a FIFO (a named
 * pipe no one writes: a mistake, or another user's trap in a shared
 * directory) must be refused, not waited on.
 *
 * The key loader opened the path before looking at what it is, and
 * open(2) of a FIFO for reading blocks until a writer comes: open never
 * returned. Expected: canal_engine_open (one rank, tcp) returns -EACCES
 * (not a regular file) at once. Bounded: the open runs in a child killed
 * after 5 s. */
#define _GNU_SOURCE
#include "check.h"
#include "hang_guard.h"

#include <canal/engine.h>
#include <sys/stat.h>
#include <sys/wait.h>

int main(void)
{
	char dir[] = "/tmp/canal-keyfifo.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[64];
	snprintf(path, sizeof path, "%s/key", dir);
	CHECK_EQ(mkfifo(path, 0600), 0);
	pid_t p = test_fork();
	CHECK(p >= 0);
	if (p == 0) {
		alarm(5);
		struct canal_engine_options o;
		canal_engine_options_init(&o);
		o.rank = 0;
		o.size = 1;
		o.driver = "tcp";
		o.key_file = path;
		struct canal_engine *e = NULL;
		int err = canal_engine_open(&o, &e);
		printf("open returned %d\n", err);
		fflush(stdout);
		if (err == 0)
			canal_engine_close(e);
		_exit(err == -EACCES ? 0 : 1);
	}
	bool ok = child_exited_ok(p, "open still in open(2) of the FIFO after 5 s");
	unlink(path);
	rmdir(dir);
	CHECK(ok);
	TEST_DONE("test_revauth_key_fifo");
}
