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
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void usage(void)
{
	fprintf(stderr, "usage: canal-launch [-n N] [-t SECONDS] [-b core|none] [--] prog [args...]\n");
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
	int opt;
	while ((opt = getopt(argc, argv, "+n:t:b:h")) != -1) {
		switch (opt) {
		case 'n': n = atoi(optarg); break;
		case 't': timeout = atof(optarg); break;
		case 'b': bind = optarg; break;
		default: usage();
		}
	}
	if (optind >= argc || n < 1 || n > 4096 || timeout <= 0 ||
	    (strcmp(bind, "core") && strcmp(bind, "none")))
		usage();
	int cpus[CPU_SETSIZE], ncpu = 0;
	cpu_set_t allowed;
	if (!strcmp(bind, "core") &&
	    sched_getaffinity(0, sizeof allowed, &allowed) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed))
				cpus[ncpu++] = c;
	char dir[256];
	snprintf(dir, sizeof dir, "%s/canal-launch.XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(dir)) {
		perror("canal-launch: mkdtemp");
		return 1;
	}
	pid_t *pids = calloc((size_t)n, sizeof *pids);
	if (!pids)
		return 1;
	char buf[32];
	fflush(NULL);
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0) {
			perror("canal-launch: fork");
			kill_all(pids, i, SIGKILL);
			remove_dir(dir);
			return 1;
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
			setenv("CANAL_LAUNCH_DIR", dir, 1);
			execvp(argv[optind], argv + optind);
			fprintf(stderr, "canal-launch: %s: %s\n", argv[optind],
				strerror(errno));
			_exit(127);
		}
		setpgid(p, p);
		pids[i] = p;
	}
	/* The ranks are not in our process group: pass a Ctrl-C on. */
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
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
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	remove_dir(dir);
	free(pids);
	return result;
}
