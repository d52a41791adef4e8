/* test_revapi_key_read_error - (review of engine.h against the code) a
 * key_file that cannot be read is reported with read's error, not as a
 * key of the wrong size.
 *
 * The key loader took any failed read() for a file of the wrong length:
 * -EINVAL and "must hold 16 to 4096 bytes", sending the user to check a
 * file whose size is right. /proc/self/mem is a regular file of this
 * user, mode 0600, whose read at offset 0 fails with EIO (nothing is
 * mapped there): expected -EIO from canal_engine_open(). Single rank,
 * TCP, no timing. */
#include "check.h"

#include <canal/engine.h>

int main(void)
{
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = 0;
	o.size = 1;
	o.driver = "tcp";
	o.key_file = "/proc/self/mem";
	struct canal_engine *e = NULL;
	int err = canal_engine_open(&o, &e);
	if (err == 0)
		canal_engine_close(e);
	if (err == -EACCES) {
		/* a kernel that shows /proc/self/mem otherwise: no case */
		fprintf(stderr, "/proc/self/mem is not a 0600 file of ours here\n");
		return 77;
	}
	CHECK_EQ(err, -EIO);
	TEST_DONE("test_revapi_key_read_error");
}
