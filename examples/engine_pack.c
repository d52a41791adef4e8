/* engine_pack.c - two processes exchange packed messages with canal's
 * message engine: rank 0 asks rank 1 for a few records; each request is a
 * message of two pieces (the record's number, an "urgent" flag); each
 * answer is a length marked express (the receiver needs it to size the
 * next piece) followed by the record itself.
 *
 * Run it under the launcher:   canal-launch -n 2 ./engine_pack [shm|tcp]
 * or alone (it then forks its peer and makes the rendezvous directory).
 * Build: cc engine_pack.c $(pkg-config --cflags --libs canal) -o engine_pack */
#define _GNU_SOURCE
#include <canal/engine.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define REQUEST 1
#define ANSWER 2
#define RECORDS 5

static int fail(const char *what, int err)
{
	fprintf(stderr, "engine_pack: %s: %s\n", what, strerror(-err));
	return 1;
}

static int client(struct canal_engine *e)
{
	for (int n = 0; n < RECORDS; n++) {
		struct canal_engine_pack *p;
		struct canal_engine_req *sent;
		int urgent = n == 0, err;
		/* The request: two pieces, one message. */
		if ((err = canal_engine_pack_begin(e, 1, REQUEST, &p)) ||
		    (err = canal_engine_pack(p, &n, sizeof n, 0)) ||
		    (err = canal_engine_pack(p, &urgent, sizeof urgent, 0)) ||
		    (err = canal_engine_pack_end(p, &sent)))
			return fail("request", err);
		/* The answer: the length first (express), then that many bytes. */
		size_t len = 0;
		if ((err = canal_engine_unpack_begin(e, 1, ANSWER, &p)) ||
		    (err = canal_engine_unpack(p, &len, sizeof len, CANAL_ENGINE_EXPRESS)))
			return fail("answer length", err);
		char *record = malloc(len + 1);
		if ((err = canal_engine_unpack(p, record, len, 0)) ||
		    (err = canal_engine_unpack_end(p, NULL)) ||
		    (err = canal_engine_wait(e, sent, NULL)))
			return fail("answer", err);
		record[len] = '\0';
		printf("record %d (%zu bytes): %s\n", n, len, record);
		free(record);
	}
	return 0;
}

static int server(struct canal_engine *e)
{
	for (int i = 0; i < RECORDS; i++) {
		struct canal_engine_pack *p;
		struct canal_engine_status st;
		int n = -1, urgent = 0, err;
		/* From whichever peer asks (any gate). */
		if ((err = canal_engine_unpack_begin(e, CANAL_ENGINE_ANY_GATE, REQUEST, &p)) ||
		    (err = canal_engine_unpack(p, &n, sizeof n, 0)) ||
		    (err = canal_engine_unpack(p, &urgent, sizeof urgent, 0)) ||
		    (err = canal_engine_unpack_end(p, &st)))
			return fail("request", err);
		char record[128];
		size_t len = (size_t)snprintf(record, sizeof record,
					      "record number %d%s, served by rank %d",
					      n, urgent ? " (urgent)" : "",
					      canal_engine_rank(e));
		struct canal_engine_req *sent;
		if ((err = canal_engine_pack_begin(e, st.gate, ANSWER, &p)) ||
		    (err = canal_engine_pack(p, &len, sizeof len, CANAL_ENGINE_EXPRESS)) ||
		    (err = canal_engine_pack(p, record, len, 0)) ||
		    (err = canal_engine_pack_end(p, &sent)) ||
		    (err = canal_engine_wait(e, sent, NULL)))
			return fail("answer", err);
	}
	return 0;
}

static int run(struct canal_engine_options *o)
{
	struct canal_engine *e;
	int err = canal_engine_open(o, &e);
	if (err)
		return fail("open", err);
	int rc = canal_engine_rank(e) == 0 ? client(e) : server(e);
	/* Rank 1 waits for the client's goodbye before closing, so that the
	 * client never sees its peer gone while it still expects answers. */
	int bye = 0;
	struct canal_engine_req *r;
	int peer = 1 - canal_engine_rank(e);
	if (!rc && canal_engine_rank(e) == 0)
		err = canal_engine_isend(e, peer, 3, &bye, sizeof bye, 0, &r);
	else if (!rc)
		err = canal_engine_irecv(e, peer, 3, &bye, sizeof bye, &r);
	if (!rc && (err || (err = canal_engine_wait(e, r, NULL))))
		rc = fail("goodbye", err);
	canal_engine_close(e);
	return rc;
}

int main(int argc, char **argv)
{
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.driver = argc > 1 ? argv[1] : NULL;
	if (getenv("CANAL_RANK"))
		return run(&o); /* under canal-launch */
	/* Alone: make the rendezvous directory and fork the peer. */
	char dir[] = "/tmp/engine_pack.XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	o.dir = dir;
	o.size = 2;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	o.rank = pid == 0 ? 1 : 0;
	int rc = run(&o);
	if (pid == 0)
		_exit(rc);
	int st;
	waitpid(pid, &st, 0);
	char path[64];
	snprintf(path, sizeof path, "%s/tcp.0", dir);
	unlink(path);
	rmdir(dir);
	return rc || !WIFEXITED(st) || WEXITSTATUS(st);
}
