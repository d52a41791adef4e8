/* SPDX-License-Identifier: MIT */
/*
 * canal-launch - start N processes of a program on this machine for the
 * message engine:  canal-launch [-n N] [-t SECONDS] [--] prog [args...]
 *
 * Each process gets CANAL_RANK (0..N-1), CANAL_SIZE (N) and
 * CANAL_LAUNCH_DIR, a fresh private directory (on /dev/shm when it exists)
 * where the engine's processes publish their addresses and shm segments.
 * Their output goes straight to ours (inherited descriptors).
 * Exit status: 0 when all exit 0; otherwise the first non-zero status seen
 * (128 + signal for a process killed by a signal), after the others have
 * been stopped (SIGTERM, then SIGKILL after 1 s). After -t seconds (default
 * 300, or $CANAL_LAUNCH_TIMEOUT) everything is killed and the status is 124.
 * Binding (-b, or $CANAL_LAUNCH_BIND): "core" (default) pins rank i to the
 * i-th CPU of the launcher's allowed set (modulo its size), as mpirun does
 * by default for small jobs: two polling ranks then never share a CPU
 * while another is idle. "none" leaves placement to the scheduler.
 * If the launcher dies, its children get SIGKILL (PR_SET_PDEATHSIG); on
 * SIGINT/SIGTERM/SIGHUP it stops them (status 128 + signal). Each rank is
 * a process group, stopped whole (with what it started).
 *
 * Several machines: -H HOST[,HOST...] (IPv4 addresses or names) places
 * rank i on host i mod H. A host that is one of this machine's addresses
 * runs its ranks here (forked, bound as above); the others through the
 * remote shell (-r CMD, or $CANAL_LAUNCH_RSH, default "ssh -o
 * BatchMode=yes"): CMD HOST "cd DIR; env VARS PROG ARGS" with every word
 * quoted for the remote shell, as ssh expects. There is no shared
 * directory: the ranks exchange their addresses through a key-value
 * service of the launcher (CANAL_LAUNCH_ADDR = ip:port; the engine's
 * "launcher" exchange, src/engine/transfer/exchange.h), listening on -a
 * ADDR, by default the address this machine uses to reach the first
 * remote host (127.0.0.1 when all are local). Each rank's TCP bind
 * address (CANAL_ENGINE_BIND) is its host's address, and
 * CANAL_ENGINE_DRIVER, _STRATEGY, _KEY_FILE and _TCP_TIMEOUT_MS are passed
 * on when set. The shm driver needs one machine (no -H).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void usage(void)
{
	fprintf(stderr, "usage: canal-launch [-n N] [-t SECONDS] [-b core|none] "
			"[-H HOST,...] [-r RSH] [-a ADDR] [--] prog [args...]\n");
	exit(2);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	char path[4200];
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

/* Each rank leads its own process group: what it starts (a shell's
 * children) is stopped with it. */
static void kill_all(pid_t *pids, int n, int sig)
{
	for (int i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(-pids[i], sig);
}

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static int status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 1;
}

/* ---- several machines (-H) ---- */

struct host {
	char name[128];
	char addr[INET_ADDRSTRLEN]; /* its IPv4 address, numeric */
	bool local;		    /* one of this machine's addresses */
};

/* Resolve h->name (IPv4) and tell whether it is this machine's: binding a
 * socket to it works only then. */
static int host_resolve(struct host *h)
{
	struct addrinfo hints = { .ai_family = AF_INET }, *ai;
	int r = getaddrinfo(h->name, NULL, &hints, &ai);
	if (r) {
		fprintf(stderr, "canal-launch: host %s: %s\n", h->name,
			gai_strerror(r));
		return -1;
	}
	struct sockaddr_in sa = *(struct sockaddr_in *)ai->ai_addr;
	freeaddrinfo(ai);
	inet_ntop(AF_INET, &sa.sin_addr, h->addr, sizeof h->addr);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	sa.sin_port = 0;
	h->local = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
	if (fd >= 0)
		close(fd);
	return 0;
}

/* The source address this machine uses toward addr (a UDP socket's
 * connect sends nothing). */
static int route_from(const char *addr, char *out, size_t cap)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(9) };
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	socklen_t l = sizeof sa;
	int ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
		 getsockname(fd, (struct sockaddr *)&sa, &l) == 0 &&
		 inet_ntop(AF_INET, &sa.sin_addr, out, (socklen_t)cap);
	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

/* The key-value service: "P key value" stores (answer "K"), "G key"
 * answers "V value" or "N"; anything else "E". Keys and values are short
 * (the engine's limit, 4 KiB); at most KV_MAX entries. One line per
 * connection. Connections are served side by side (up to KV_CONNS at once,
 * non-blocking, the others wait in the listen queue), and one that has not
 * sent its line within KV_TIMEOUT_S is closed: a slow, lossy or hostile
 * client holds up nobody. */
#define KV_MAX 65536
#define KV_LINE 4400
#define KV_CONNS 64
#define KV_TIMEOUT_S 10.0
/* At most this many ranks (-n), each watched through a pidfd. */
#define MAX_LOCAL_PIDFDS 4096

struct kv {
	char *key, *val;
};
static struct kv *kv;
static size_t nkv;

struct kv_conn {
	int fd; /* -1: free */
	size_t got;
	double deadline;
	char line[KV_LINE];
};
static struct kv_conn kv_conns[KV_CONNS];

static const char *kv_answer(char *line, char *out, size_t cap)
{
	char *key = line + 2, *sp = strchr(key, ' ');
	if (line[0] == 'P' && line[1] == ' ' && sp && sp > key) {
		*sp = 0;
		size_t i;
		for (i = 0; i < nkv && strcmp(kv[i].key, key); i++)
			;
		if (i < nkv) {
			char *v = strdup(sp + 1);
			if (!v)
				return "E\n";
			free(kv[i].val);
			kv[i].val = v;
			return "K\n";
		}
		if (nkv == KV_MAX)
			return "E\n";
		struct kv *g = realloc(kv, (nkv + 1) * sizeof *kv);
		if (!g)
			return "E\n";
		kv = g;
		kv[nkv].key = strdup(key);
		kv[nkv].val = strdup(sp + 1);
		if (!kv[nkv].key || !kv[nkv].val) {
			free(kv[nkv].key);
			free(kv[nkv].val);
			return "E\n";
		}
		nkv++;
		return "K\n";
	}
	if (line[0] == 'G' && line[1] == ' ' && !sp) {
		for (size_t i = 0; i < nkv; i++)
			if (!strcmp(kv[i].key, key)) {
				snprintf(out, cap, "V %s\n", kv[i].val);
				return out;
			}
		return "N\n";
	}
	return "E\n";
}

static void kv_close(struct kv_conn *c)
{
	close(c->fd);
	c->fd = -1;
}

/* Read what connection c has; answer and close once its line is whole,
 * or close it when it overflows, ends early or fails. */
static void kv_read(struct kv_conn *c)
{
	for (;;) {
		ssize_t k = recv(c->fd, c->line + c->got, sizeof c->line - 1 - c->got, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (k <= 0) {
			kv_close(c);
			return;
		}
		c->got += (size_t)k;
		c->line[c->got] = 0;
		char *nl = strchr(c->line, '\n');
		if (nl) {
			*nl = 0;
			char out[KV_LINE + 4];
			const char *ans = kv_answer(c->line, out, sizeof out);
			/* Small, into an empty socket buffer: it fits. A failed
			 * answer: the rank asks again. */
			(void)!send(c->fd, ans, strlen(ans), MSG_NOSIGNAL);
			kv_close(c);
			return;
		}
		if (c->got == sizeof c->line - 1) {
			kv_close(c); /* no line fits: refused */
			return;
		}
	}
}

/* A pidfd of child p (CLOEXEC), or -1. */
static int open_pidfd(pid_t p)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, p, 0);
#else
	(void)p;
	return -1;
#endif
}

/* In a rank, before exec: the stop signals' default actions (a signal
 * held until now then ends the rank, as it would have) and the signal
 * mask the launcher was started with (a mask survives exec). */
static void child_signals(const sigset_t *orig)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	sigprocmask(SIG_SETMASK, orig, NULL);
}

/* Wait up to ms (or until a signal: the wait has the signal mask
 * `during`) for one of the ranks to end (their pidfds, the n entries of
 * pidfd that are >= 0) or, with a key-value listener (lfd >= 0), for the
 * listener or its connections, and serve those. A connection past its
 * deadline is closed, and ms is cut to the nearest deadline. */
static void wait_events(int lfd, const int *pidfd, int n_pid, int ms,
			const sigset_t *during)
{
	struct pollfd pf[KV_CONNS + 1 + MAX_LOCAL_PIDFDS];
	int who[KV_CONNS + 1 + MAX_LOCAL_PIDFDS], n = 0, open_conns = 0;
	double now = now_s();
	for (int i = 0; lfd >= 0 && i < KV_CONNS; i++) {
		struct kv_conn *c = &kv_conns[i];
		if (c->fd < 0)
			continue;
		if (now > c->deadline) {
			kv_close(c);
			continue;
		}
		int left = (int)((c->deadline - now) * 1000) + 1;
		if (left < ms)
			ms = left;
		pf[n] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
		who[n++] = i;
		open_conns++;
	}
	if (lfd >= 0 && open_conns < KV_CONNS) {
		pf[n] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		who[n++] = -1;
	}
	for (int i = 0; i < n_pid && n < (int)(sizeof pf / sizeof pf[0]); i++) {
		if (pidfd[i] < 0)
			continue;
		pf[n] = (struct pollfd){ .fd = pidfd[i], .events = POLLIN };
		who[n++] = -2; /* a rank ended: the caller reaps it */
	}
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	if (ppoll(pf, (nfds_t)n, &ts, during) <= 0)
		return;
	now = now_s(); /* after up to a second's wait: new deadlines */
	for (int k = 0; k < n; k++) {
		if (!pf[k].revents || who[k] == -2)
			continue;
		if (who[k] >= 0) {
			kv_read(&kv_conns[who[k]]);
			continue;
		}
		for (int i = 0; i < KV_CONNS; i++) {
			struct kv_conn *c = &kv_conns[i];
			if (c->fd >= 0)
				continue;
			c->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (c->fd < 0)
				break;
			c->got = 0;
			c->deadline = now + KV_TIMEOUT_S;
			kv_read(c);
		}
	}
}

static int kv_listen(const char *addr, char *where, size_t cap)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "canal-launch: -a %s: not an IPv4 address\n", addr);
		return -1;
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	socklen_t l = sizeof sa;
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(fd, 1024) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &l) < 0) {
		fprintf(stderr, "canal-launch: listening on %s: %s\n", addr,
			strerror(errno));
		return -1;
	}
	snprintf(where, cap, "%s:%u", addr, (unsigned)ntohs(sa.sin_port));
	for (int i = 0; i < KV_CONNS; i++)
		kv_conns[i].fd = -1;
	return fd;
}

/* Append s to b (cap), quoted for a POSIX shell: 'it'\''s'. */
static int quote(char *b, size_t cap, const char *s)
{
	size_t n = strlen(b);
	if (n + 3 >= cap) /* room for '' and a space, then the NUL */
		return -1;
	b[n++] = '\'';
	for (; *s; s++) {
		const char *piece = *s == '\'' ? "'\\''" : NULL;
		size_t k = piece ? 4 : 1;
		if (n + k + 2 >= cap)
			return -1;
		if (piece)
			memcpy(b + n, piece, k);
		else
			b[n] = *s;
		n += k;
	}
	b[n++] = '\'';
	b[n++] = ' ';
	b[n] = 0;
	return 0;
}

/* The remote command line: cd to our directory, env with the rank's
 * variables, then the program and its arguments, all quoted. */
static int remote_command(char *b, size_t cap, char **env, int nenv,
			  char **argv)
{
	char cwd[4096];
	b[0] = 0;
	if (getcwd(cwd, sizeof cwd)) {
		snprintf(b, cap, "cd ");
		if (quote(b, cap, cwd))
			return -1;
		size_t n = strlen(b);
		snprintf(b + n, cap - n, "2>/dev/null; ");
	}
	size_t n = strlen(b);
	snprintf(b + n, cap - n, "exec env ");
	for (int i = 0; i < nenv; i++)
		if (quote(b, cap, env[i]))
			return -1;
	for (int i = 0; argv[i]; i++)
		if (quote(b, cap, argv[i]))
			return -1;
	return 0;
}

/* Split the remote shell command into words (spaces and tabs). */
static int split_words(char *s, char **w, int max)
{
	int n = 0;
	for (char *t = strtok(s, " \t"); t; t = strtok(NULL, " \t")) {
		if (n == max - 1)
			return -1;
		w[n++] = t;
	}
	w[n] = NULL;
	return n;
}

static const char *const passed_on[] = {
	"CANAL_ENGINE_DRIVER", "CANAL_ENGINE_STRATEGY", "CANAL_ENGINE_KEY_FILE",
	"CANAL_ENGINE_TCP_TIMEOUT_MS",
};

int main(int argc, char **argv)
{
	int n = 2;
	double timeout = 300;
	const char *t = getenv("CANAL_LAUNCH_TIMEOUT");
	if (t && *t)
		timeout = atof(t);
	const char *bind = getenv("CANAL_LAUNCH_BIND");
	if (!bind || !*bind)
		bind = "core";
	const char *host_list = NULL, *kv_addr = NULL;
	const char *rsh = getenv("CANAL_LAUNCH_RSH");
	if (!rsh || !*rsh)
		rsh = "ssh -o BatchMode=yes";
	int opt;
	while ((opt = getopt(argc, argv, "+n:t:b:H:r:a:h")) != -1) {
		switch (opt) {
		case 'n': n = atoi(optarg); break;
		case 't': timeout = atof(optarg); break;
		case 'b': bind = optarg; break;
		case 'H': host_list = optarg; break;
		case 'r': rsh = optarg; break;
		case 'a': kv_addr = optarg; break;
		default: usage();
		}
	}
	if (optind >= argc || n < 1 || n > MAX_LOCAL_PIDFDS || !(timeout > 0) ||
	    (strcmp(bind, "core") && strcmp(bind, "none")))
		usage();
	int cpus[CPU_SETSIZE], ncpu = 0;
	cpu_set_t allowed;
	if (!strcmp(bind, "core") &&
	    sched_getaffinity(0, sizeof allowed, &allowed) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed))
				cpus[ncpu++] = c;
	/* -H: the hosts, the key-value service, the remote shell. */
	struct host *hosts = NULL;
	int nhosts = 0, lfd = -1, remote = 0;
	char kv_where[96] = "";
	char rsh_buf[1024], *rsh_argv[64];
	if (host_list) {
		hosts = calloc(strlen(host_list) + 1, sizeof *hosts);
		if (!hosts)
			return 1;
		for (const char *p = host_list; *p;) {
			size_t l = strcspn(p, ",");
			if (l == 0 || l >= sizeof hosts[0].name)
				usage();
			memcpy(hosts[nhosts].name, p, l);
			if (host_resolve(&hosts[nhosts]))
				return 1;
			remote += !hosts[nhosts].local;
			nhosts++;
			p += l + (p[l] == ',');
		}
		if (nhosts == 0)
			usage();
		snprintf(rsh_buf, sizeof rsh_buf, "%s", rsh);
		if (split_words(rsh_buf, rsh_argv, 60) < 1) {
			fprintf(stderr, "canal-launch: -r: empty or too long\n");
			return 1;
		}
		char from[INET_ADDRSTRLEN] = "127.0.0.1";
		for (int h = 0; h < nhosts && !kv_addr; h++)
			if (!hosts[h].local &&
			    route_from(hosts[h].addr, from, sizeof from) == 0)
				break;
		if ((lfd = kv_listen(kv_addr ? kv_addr : from, kv_where,
				     sizeof kv_where)) < 0)
			return 1;
	}
	char dir[256] = "";
	if (!hosts) {
		snprintf(dir, sizeof dir, "%s/canal-launch.XXXXXX",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
		if (!mkdtemp(dir)) {
			perror("canal-launch: mkdtemp");
			return 1;
		}
	}
	pid_t *pids = calloc((size_t)n, sizeof *pids);
	int *pidfd = malloc((size_t)n * sizeof *pidfd);
	if (!pids || !pidfd)
		return 1;
	for (int i = 0; i < n; i++)
		pidfd[i] = -1;
	char buf[32];
	/* The ranks are not in our process group: pass a Ctrl-C on. The
	 * handlers are in place before the first fork (a signal while ranks
	 * start is not the default action's), and the signals are let in
	 * only inside the wait (ppoll's mask `during`): one that comes while
	 * the loop runs is held until then, so it is seen at once, never
	 * after a whole wait. Each rank gets the mask and the actions back
	 * before it execs. */
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigset_t stop_sigs, orig, during;
	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGINT);
	sigaddset(&stop_sigs, SIGTERM);
	sigaddset(&stop_sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop_sigs, &orig);
	during = orig;
	sigdelset(&during, SIGINT);
	sigdelset(&during, SIGTERM);
	sigdelset(&during, SIGHUP);
	fflush(NULL);
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p == 0)
			child_signals(&orig);
		if (p < 0) {
			perror("canal-launch: fork");
			kill_all(pids, i, SIGKILL);
			if (*dir)
				remove_dir(dir);
			return 1;
		}
		const struct host *h = hosts ? &hosts[i % nhosts] : NULL;
		if (p == 0 && h && !h->local) {
			setpgid(0, 0);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			char env[8][4200], *envp[8], cmd[65536];
			int ne = 0;
			snprintf(env[ne++], sizeof env[0], "CANAL_RANK=%d", i);
			snprintf(env[ne++], sizeof env[0], "CANAL_SIZE=%d", n);
			snprintf(env[ne++], sizeof env[0], "CANAL_LAUNCH_ADDR=%s", kv_where);
			snprintf(env[ne++], sizeof env[0], "CANAL_ENGINE_BIND=%s", h->addr);
			for (size_t k = 0; k < sizeof passed_on / sizeof *passed_on; k++) {
				const char *v = getenv(passed_on[k]);
				if (v)
					snprintf(env[ne++], sizeof env[0], "%s=%s",
						 passed_on[k], v);
			}
			for (int k = 0; k < ne; k++)
				envp[k] = env[k];
			if (remote_command(cmd, sizeof cmd, envp, ne, argv + optind)) {
				fprintf(stderr, "canal-launch: command line too long\n");
				_exit(127);
			}
			int w = 0;
			char *rargv[68];
			while (rsh_argv[w]) {
				rargv[w] = rsh_argv[w];
				w++;
			}
			rargv[w++] = (char *)h->name;
			rargv[w++] = cmd;
			rargv[w] = NULL;
			execvp(rargv[0], rargv);
			fprintf(stderr, "canal-launch: %s: %s\n", rargv[0],
				strerror(errno));
			_exit(127);
		}
		if (p == 0) {
			setpgid(0, 0);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (ncpu > 0) {
				cpu_set_t one;
				CPU_ZERO(&one);
				CPU_SET(cpus[i % ncpu], &one);
				sched_setaffinity(0, sizeof one, &one);
			}
			snprintf(buf, sizeof buf, "%d", i);
			setenv("CANAL_RANK", buf, 1);
			snprintf(buf, sizeof buf, "%d", n);
			setenv("CANAL_SIZE", buf, 1);
			if (h) {
				unsetenv("CANAL_LAUNCH_DIR");
				setenv("CANAL_LAUNCH_ADDR", kv_where, 1);
				setenv("CANAL_ENGINE_BIND", h->addr, 1);
			} else {
				setenv("CANAL_LAUNCH_DIR", dir, 1);
			}
			execvp(argv[optind], argv + optind);
			fprintf(stderr, "canal-launch: %s: %s\n", argv[optind],
				strerror(errno));
			_exit(127);
		}
		setpgid(p, p);
		pids[i] = p;
		/* Readable once the rank has ended: the launcher sleeps until
		 * then (-1 where the kernel has no pidfds, before 5.3, or out
		 * of descriptors: it then looks every 2 ms). */
		pidfd[i] = open_pidfd(p);
	}
	bool all_pidfds = true;
	for (int i = 0; i < n; i++)
		all_pidfds = all_pidfds && pidfd[i] >= 0;
	/* Some missing: none are used (the 2 ms look), and the others are
	 * given back (the key-value service needs descriptors). */
	for (int i = 0; i < n && !all_pidfds; i++) {
		if (pidfd[i] >= 0)
			close(pidfd[i]);
		pidfd[i] = -1;
	}
	double deadline = now_s() + timeout, stop_at = 0;
	int left = n, result = 0;
	while (left > 0) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p > 0) {
			for (int i = 0; i < n; i++) {
				if (pids[i] != p)
					continue;
				pids[i] = 0;
				if (pidfd[i] >= 0)
					close(pidfd[i]);
				pidfd[i] = -1;
				left--;
				int code = status_code(st);
				if (code && !result) {
					result = code;
					fprintf(stderr, "canal-launch: rank %d exited with status %d; stopping the others\n",
						i, code);
					kill_all(pids, n, SIGTERM);
					stop_at = now_s() + 1;
				}
			}
			continue;
		}
		if (p < 0 && errno != EINTR)
			break;
		double now = now_s();
		if (got_signal && !result) {
			result = 128 + got_signal;
			kill_all(pids, n, SIGTERM);
			stop_at = now + 1;
		}
		if (stop_at && now > stop_at) {
			kill_all(pids, n, SIGKILL);
			stop_at = 0;
		}
		if (now > deadline && !result) {
			fprintf(stderr, "canal-launch: timeout after %g s; killing every rank\n",
				timeout);
			kill_all(pids, n, SIGKILL);
			result = 124;
		}
		/* Until a rank ends, a signal, a key-value request, or the next
		 * of the deadlines above; a launcher that woke every few ms
		 * took a CPU from a polling rank each time (on a machine with
		 * as many CPUs as ranks, the engine's benchmarks). */
		double until = stop_at ? stop_at : deadline;
		if (result && !stop_at)
			until = now + 1; /* killed: reaped as they go */
		/* In double until clamped: a timeout of weeks (or inf) must
		 * not overflow the int. */
		double d = (until - now) * 1000;
		int ms = !(d > 0) ? 1 : d >= 1000 ? 1000 : (int)d + 1;
		if (!all_pidfds)
			ms = 2;
		wait_events(lfd, pidfd, n, ms, &during);
	}
	sigprocmask(SIG_SETMASK, &orig, NULL);
	for (int i = 0; i < n; i++)
		if (pidfd[i] >= 0)
			close(pidfd[i]);
	free(pidfd);
	if (*dir)
		remove_dir(dir);
	if (lfd >= 0) {
		close(lfd);
		for (int i = 0; i < KV_CONNS; i++)
			if (kv_conns[i].fd >= 0)
				kv_close(&kv_conns[i]);
	}
	for (size_t k = 0; k < nkv; k++) {
		free(kv[k].key);
		free(kv[k].val);
	}
	free(kv);
	free(hosts);
	free(pids);
	return result;
}
