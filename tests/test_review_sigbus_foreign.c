/*
 * test_review_sigbus_foreign - a SIGBUS that is not canal's must have its
 * usual effect: with the default disposition, the process dies of it.
 *
 * Defect (hostile review of issue 11): on_sigbus (sigbus.c), for a signal
 * outside its registered mappings with the previous disposition SIG_DFL,
 * restores SIG_DFL and returns, counting on "the access faults again".
 * That holds for a fault, not for a SIGBUS sent by kill(2), raise(3),
 * tgkill or sigqueue: nothing re-raises it, so the signal is swallowed and
 * the process goes on, where without canal it would have died (and dumped
 * core). Worse, canal's handler is now gone for the life of the process:
 * a later truncation of a named segment by a peer kills it, the very thing
 * sigbus.c exists to prevent.
 *
 * Deterministic: a child that has a named (guarded) channel raises SIGBUS.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <stdbool.h>
#include <stdio.h>
#include <sys/wait.h>

int main(void)
{
	alarm(20);
	char name[64];
	snprintf(name, sizeof(name), "canal-review-sigbus-%d", (int)getpid());

	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct canal_chan *ch = NULL;
		int r = canal_chan_create_named(name, sizeof(long), 4,
						CANAL_SHARED, 0600, &ch);
		if (r != 0) {
			fprintf(stderr, "create_named: %s\n", canal_strerror(r));
			_exit(2);
		}
		canal_chan_unlink(name);
		raise(SIGBUS); /* not a fault in canal's mapping */
		_exit(0);      /* only reached if the signal was swallowed */
	}
	int status;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
		CHECK(!"could not create a named channel");
	/* Killed by SIGBUS (or, under a sanitizer whose SIGBUS handler
	 * canal chains to, ended by its report): anything but going on. */
	bool swallowed = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (swallowed)
		fprintf(stderr, "raise(SIGBUS) was swallowed: the child went "
				"on and exited normally\n");
	CHECK(!swallowed);
	if (WIFSIGNALED(status)) {
#ifdef CANAL_SANITIZED
		/* The sanitizer's handler reports it and aborts. */
		CHECK(WTERMSIG(status) == SIGBUS || WTERMSIG(status) == SIGABRT);
#else
		CHECK_EQ(WTERMSIG(status), SIGBUS);
#endif
	}
	TEST_DONE("test_review_sigbus_foreign");
}
