#define _GNU_SOURCE
/* test_engine_progress - the progress thread (option progress = "thread",
 * $CANAL_ENGINE_PROGRESS):
 *  - while the sender makes no call at all, its messages still go: a
 *    rendezvous (TCP: the sender must answer the receiver's ready-to-
 *    receive with the data) and a flood beyond the credit window (shm and
 *    TCP: queued pieces leave only as credits come back). The receiver
 *    tells the sender through a pipe when it has everything. The same job
 *    in caller mode is the control: there the receiver cannot finish while
 *    the sender sleeps (if it could, this test would prove nothing, so it
 *    fails);
 *  - several user threads of one rank share the session (allowed with the
 *    thread): exactly once and in order per (gate, tag);
 *  - once the session has no work the thread sleeps: it uses almost no CPU
 *    over half a second of an idle session (a polling thread would use
 *    most of it);
 *  - bad mode names give -EINVAL; a remote hub refuses a session with a
 *    progress thread. */
#include "engine_job.h"

#include <canal/remote.h>
#include <dirent.h>
#include <poll.h>
#include <pthread.h>

static int done_pipe[2];
static bool threaded;

/* Pieces: big (one rendezvous) or many small ones beyond the window. */
#define BIG (4u << 20)
#define SMALL_N 1500
#define SMALL_SZ 4000 /* 1500 x 4 KB = 6 MB: three credit windows */

static unsigned char pattern(size_t i, unsigned salt)
{
	return (unsigned char)(i * 31u + salt);
}

/* Whether a byte arrives on the pipe within ms. */
static bool pipe_ready(int ms)
{
	struct pollfd p = { .fd = done_pipe[0], .events = POLLIN };
	int n;
	do
		n = poll(&p, 1, ms);
	while (n < 0 && errno == EINTR);
	CHECK(n >= 0);
	return n == 1;
}

static int sleepy_sender(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	bool big = *(bool *)arg;
	size_t n = big ? 1 : SMALL_N, sz = big ? BIG : SMALL_SZ;
	unsigned char *buf = malloc(n * sz);
	struct canal_engine_req **q = calloc(n, sizeof *q);
	CHECK(buf && q);
	if (rank == 0) {
		for (size_t i = 0; i < n * sz; i++)
			buf[i] = pattern(i, 7);
		for (size_t i = 0; i < n; i++)
			CHECK_EQ(canal_engine_isend(e, 1, 9, buf + i * sz, sz, 0,
						    &q[i]),
				 0);
		/* No call into the session from here until the receiver has
		 * everything (thread) or a while has passed (caller). */
		bool got = pipe_ready(threaded ? 60000 : 300);
		CHECK_EQ(got, threaded);
		for (size_t i = 0; i < n; i++)
			CHECK_EQ(canal_engine_wait(e, q[i], NULL), 0);
		/* Caller mode: the sends are complete once their bytes are
		 * the driver's; what the socket did not take yet still needs
		 * our progress. */
		if (!threaded) {
			uint64_t end = canal_now_ns() + 60ull * 1000000000u;
			while (!pipe_ready(0)) {
				CHECK(canal_now_ns() < end);
				canal_engine_progress(e);
			}
		}
	} else {
		for (size_t i = 0; i < n; i++)
			CHECK_EQ(canal_engine_irecv(e, 0, 9, buf + i * sz, sz,
						    &q[i]),
				 0);
		for (size_t i = 0; i < n; i++) {
			struct canal_engine_status st;
			CHECK_EQ(canal_engine_wait(e, q[i], &st), 0);
			CHECK_EQ(st.len, sz);
		}
		for (size_t i = 0; i < n * sz; i++)
			if (buf[i] != pattern(i, 7))
				CHECK_EQ(buf[i], pattern(i, 7));
		CHECK_EQ(write(done_pipe[1], "x", 1), 1);
	}
	/* closing handshake: rank 1 stays until rank 0 is done with it */
	int one = 1;
	struct canal_engine_req *h;
	if (rank == 0)
		CHECK_EQ(canal_engine_isend(e, 1, 10, &one, sizeof one, 0, &h), 0);
	else
		CHECK_EQ(canal_engine_irecv(e, 0, 10, &one, sizeof one, &h), 0);
	CHECK_EQ(canal_engine_wait(e, h, NULL), 0);
	free(buf);
	free(q);
	return 0;
}

static void sleepy(const char *driver, bool big)
{
	CHECK_EQ(pipe(done_pipe), 0);
	struct job j = { .n = 2, .driver = driver, .strategy = "default",
			 .timeout_s = 120, .killed_rank = -1 };
	CHECK_EQ(job_run(&j, sleepy_sender, &big), 0);
	close(done_pipe[0]);
	close(done_pipe[1]);
}

/* ---- several user threads on one session ---- */

#define THREADS 3
#define PER_THREAD 2000

struct user {
	struct canal_engine *e;
	int t;
};

static void *user_sender(void *arg)
{
	struct user *u = arg;
	for (uint32_t i = 0; i < PER_THREAD; i++) {
		uint32_t v[2] = { (uint32_t)u->t, i };
		struct canal_engine_req *q;
		CHECK_EQ(canal_engine_isend(u->e, 1, (unsigned)u->t, v, sizeof v,
					    0, &q),
			 0);
		if (i % 3 == 0) {
			CHECK_EQ(canal_engine_wait(u->e, q, NULL), 0);
		} else {
			int r;
			while ((r = canal_engine_test(u->e, q, NULL)) == 0)
				;
			CHECK_EQ(r, 1);
		}
	}
	return NULL;
}

static void *user_receiver(void *arg)
{
	struct user *u = arg;
	for (uint32_t i = 0; i < PER_THREAD; i++) {
		uint32_t v[2];
		struct canal_engine_req *q;
		CHECK_EQ(canal_engine_irecv(u->e, 0, (unsigned)u->t, v, sizeof v,
					    &q),
			 0);
		struct canal_engine_status st;
		CHECK_EQ(canal_engine_wait(u->e, q, &st), 0);
		CHECK_EQ(st.len, sizeof v);
		CHECK_EQ(v[0], (uint32_t)u->t); /* its own tag only */
		CHECK_EQ(v[1], i);              /* in order, none lost */
	}
	return NULL;
}

static int threads_body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	pthread_t th[THREADS];
	struct user u[THREADS];
	for (int t = 0; t < THREADS; t++) {
		u[t] = (struct user){ e, t };
		CHECK_EQ(pthread_create(&th[t], NULL,
					rank == 0 ? user_sender : user_receiver,
					&u[t]),
			 0);
	}
	for (int t = 0; t < THREADS; t++)
		CHECK_EQ(pthread_join(th[t], NULL), 0);
	int one = 1;
	struct canal_engine_req *h;
	if (rank == 0)
		CHECK_EQ(canal_engine_isend(e, 1, 99, &one, sizeof one, 0, &h), 0);
	else
		CHECK_EQ(canal_engine_irecv(e, 0, 99, &one, sizeof one, &h), 0);
	CHECK_EQ(canal_engine_wait(e, h, NULL), 0);
	return 0;
}

/* ---- an idle session's thread sleeps ---- */

/* CPU ticks (utime + stime) of every thread of this process but the
 * calling one. */
static long other_threads_ticks(void)
{
	char self[32];
	snprintf(self, sizeof self, "%ld", (long)gettid());
	DIR *d = opendir("/proc/self/task");
	CHECK(d);
	long sum = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !strcmp(de->d_name, self))
			continue;
		char p[300], line[1024];
		snprintf(p, sizeof p, "/proc/self/task/%s/stat", de->d_name);
		FILE *f = fopen(p, "r");
		if (!f)
			continue; /* the thread is gone */
		if (fgets(line, sizeof line, f)) {
			/* fields after the ")" of comm: state is field 3,
			 * utime 14, stime 15 */
			char *c = strrchr(line, ')');
			CHECK(c);
			long ut = 0, st = 0;
			CHECK_EQ(sscanf(c + 2,
					"%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld",
					&ut, &st),
				 2);
			sum += ut + st;
		}
		fclose(f);
	}
	closedir(d);
	return sum;
}

static int idle_body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	/* Some traffic first, so the thread has worked and gone idle. */
	int v = 5;
	struct canal_engine_req *h;
	for (int i = 0; i < 100; i++) {
		if (rank == 0)
			CHECK_EQ(canal_engine_isend(e, 1, 1, &v, sizeof v, 0, &h), 0);
		else
			CHECK_EQ(canal_engine_irecv(e, 0, 1, &v, sizeof v, &h), 0);
		CHECK_EQ(canal_engine_wait(e, h, NULL), 0);
	}
	/* Every request is complete and nothing is queued: let its back-off
	 * (at most a few ms) run out, then watch it for half a second. */
	usleep(50 * 1000);
	long t0 = other_threads_ticks();
	usleep(500 * 1000);
	long used = other_threads_ticks() - t0;
	long hz = sysconf(_SC_CLK_TCK);
	if (used * 1000 / hz > 50) {
		fprintf(stderr, "rank %d: idle progress thread used %ld ms of "
				"CPU in 500 ms\n",
			rank, used * 1000 / hz);
		return 1;
	}
	/* Work after sleeping wakes it: rank 0 starts a rendezvous and makes
	 * no call until rank 1 has the data (on TCP, rank 0 must answer the
	 * ready-to-receive: its thread does, once woken by the isend). */
	unsigned char *big = malloc(BIG);
	CHECK(big);
	if (rank == 0) {
		for (size_t i = 0; i < BIG; i++)
			big[i] = pattern(i, 3);
		CHECK_EQ(canal_engine_isend(e, 1, 2, big, BIG, 0, &h), 0);
		CHECK(pipe_ready(60000));
		CHECK_EQ(canal_engine_wait(e, h, NULL), 0);
	} else {
		CHECK_EQ(canal_engine_irecv(e, 0, 2, big, BIG, &h), 0);
		CHECK_EQ(canal_engine_wait(e, h, NULL), 0);
		for (size_t i = 0; i < BIG; i++)
			if (big[i] != pattern(i, 3))
				CHECK_EQ(big[i], pattern(i, 3));
		CHECK_EQ(write(done_pipe[1], "y", 1), 1);
	}
	free(big);
	/* closing handshake */
	if (rank == 0)
		CHECK_EQ(canal_engine_isend(e, 1, 3, &v, sizeof v, 0, &h), 0);
	else
		CHECK_EQ(canal_engine_irecv(e, 0, 3, &v, sizeof v, &h), 0);
	CHECK_EQ(canal_engine_wait(e, h, NULL), 0);
	return 0;
}

static void options(void)
{
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = 0;
	o.size = 1;
	o.progress = "threads"; /* not a mode */
	struct canal_engine *e = NULL;
	CHECK_EQ(canal_engine_open(&o, &e), -EINVAL);
	o.progress = "";
	CHECK_EQ(canal_engine_open(&o, &e), -EINVAL);
	o.progress = "thread";
	CHECK_EQ(canal_engine_open(&o, &e), 0);
	struct canal_remote_hub *hub = NULL;
	CHECK_EQ(canal_remote_hub_start(e, &hub), -EINVAL);
	CHECK_EQ(canal_engine_progress(e), 0);
	CHECK_EQ(canal_engine_close(e), 0);
	o.progress = "caller";
	CHECK_EQ(canal_engine_open(&o, &e), 0);
	CHECK_EQ(canal_engine_close(e), 0);
	/* from the environment */
	o.progress = NULL;
	setenv("CANAL_ENGINE_PROGRESS", "nonsense", 1);
	CHECK_EQ(canal_engine_open(&o, &e), -EINVAL);
	unsetenv("CANAL_ENGINE_PROGRESS");
}

int main(void)
{
	options();
	/* The control: caller mode, the receiver cannot finish alone. */
	unsetenv("CANAL_ENGINE_PROGRESS");
	threaded = false;
	sleepy("tcp", true);
	sleepy("shm", false);
	/* The thread (job_open leaves progress NULL: from the environment). */
	setenv("CANAL_ENGINE_PROGRESS", "thread", 1);
	threaded = true;
	sleepy("tcp", true);
	sleepy("tcp", false);
	sleepy("shm", false);
	sleepy("shm", true);
	struct job j = { .n = 2, .driver = "shm", .strategy = "default",
			 .timeout_s = 120, .killed_rank = -1 };
	CHECK_EQ(job_run(&j, threads_body, NULL), 0);
	j.driver = "tcp";
	j.strategy = "aggregate";
	CHECK_EQ(job_run(&j, threads_body, NULL), 0);
	CHECK_EQ(pipe(done_pipe), 0);
	j.driver = "tcp";
	j.strategy = "default";
	CHECK_EQ(job_run(&j, idle_body, NULL), 0);
	close(done_pipe[0]);
	close(done_pipe[1]);
	puts("test_engine_progress: ok");
	return 0;
}
