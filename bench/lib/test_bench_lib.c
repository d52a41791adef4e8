/* SPDX-License-Identifier: MIT */
/* test_bench_lib.c - every helper of bench.h, with its error paths. */
#define _GNU_SOURCE /* sched_getcpu, CPU_SETSIZE */
#include "bench.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__,   \
				__LINE__, #cond);                                \
			failures++;                                              \
		}                                                                \
	} while (0)

static void test_clock(void)
{
	uint64_t a = bench_now_ns();
	double s = bench_now_s();
	uint64_t b = bench_now_ns();

	CHECK(b >= a);
	CHECK(s > 0 && fabs(s - (double)a * 1e-9) < 1.0);
	unsigned long spins = BENCH_YIELD_AFTER - 1;
	bench_relax();
	bench_relax_yield(&spins); /* the yield resets the count */
	CHECK(spins == 0);
	bench_relax_yield(&spins);
	CHECK(spins == 1);
}

static void test_parse(void)
{
	long v = 0;
	size_t z = 0;

	CHECK(bench_parse_long("42", 1, 100, &v) == 0 && v == 42);
	CHECK(bench_parse_long("0", 1, 100, &v) == -1);
	CHECK(bench_parse_long("101", 1, 100, &v) == -1);
	CHECK(bench_parse_long("", 0, 100, &v) == -1);
	CHECK(bench_parse_long("12x", 0, 100, &v) == -1);
	CHECK(bench_parse_long("-3", -5, 5, &v) == 0 && v == -3);
	CHECK(bench_parse_long("99999999999999999999", 0, LONG_MAX, &v) == -1);
	CHECK(bench_arg_long("7", "count", 1, 10) == 7);

	CHECK(bench_parse_size("64", 1, 1 << 20, &z) == 0 && z == 64);
	CHECK(bench_parse_size("4K", 1, 1 << 20, &z) == 0 && z == 4096);
	CHECK(bench_parse_size("4KiB", 1, 1 << 20, &z) == 0 && z == 4096);
	CHECK(bench_parse_size("1MiB", 1, 1 << 20, &z) == 0 && z == 1 << 20);
	CHECK(bench_parse_size("64B", 1, 1 << 20, &z) == 0 && z == 64);
	CHECK(bench_parse_size("2M", 1, 1 << 20, &z) == -1); /* above max */
	CHECK(bench_parse_size("0", 1, 10, &z) == -1);	    /* below min */
	CHECK(bench_parse_size("-1", 0, 10, &z) == -1);
	CHECK(bench_parse_size("4G", 0, SIZE_MAX, &z) == -1);
	CHECK(bench_parse_size("K", 0, 10, &z) == -1);
}

static void test_percentile(void)
{
	uint64_t v[] = { 50, 10, 40, 20, 30 };

	bench_sort_u64(v, 5);
	for (int i = 0; i < 5; i++)
		CHECK(v[i] == (uint64_t)(10 * (i + 1)));
	CHECK(bench_percentile(v, 5, 0) == 10.0);
	CHECK(bench_percentile(v, 5, 50) == 30.0);
	CHECK(bench_percentile(v, 5, 100) == 50.0);
	CHECK(fabs(bench_percentile(v, 5, 90) - 46.0) < 1e-9); /* interpolated */
	CHECK(bench_percentile(v, 1, 99) == 10.0);
	CHECK(bench_percentile(v, 0, 50) == 0.0);
}

static void test_io(void)
{
	int fd[2];
	char out[100000], in[sizeof(out)];

	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (char)(i * 7);
	CHECK(pipe(fd) == 0);
	pid_t pid = fork();
	if (pid == 0) { /* more than a pipe holds: short writes and reads */
		close(fd[0]);
		_exit(bench_write_all(fd[1], out, sizeof(out)) == 0 ? 0 : 1);
	}
	close(fd[1]);
	CHECK(bench_read_full(fd[0], in, sizeof(in)) == (ssize_t)sizeof(in));
	CHECK(memcmp(in, out, sizeof(in)) == 0);
	CHECK(bench_read_full(fd[0], in, 1) == 0); /* end of file */
	int status;
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fd[0]);
	CHECK(bench_read_full(fd[0], in, 1) == -EBADF);
	CHECK(bench_write_all(fd[0], out, 1) == -EBADF);
}

static void test_shared_and_pinning(void)
{
	int *p = bench_shared_alloc(sizeof(int));
	int a, b;

	CHECK(p && *p == 0);
	pid_t pid = fork();
	if (pid == 0) {
		*p = 42;
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	CHECK(*p == 42);
	bench_shared_free(p, sizeof(int));

	CHECK(bench_pin_self(-1) == 0);
	bench_two_cpus(0, &a, &b);
	CHECK(a == -1 && b == -1);
	bench_two_cpus(1, &a, &b);
	CHECK((a == -1 && b == -1) || (a >= 0 && b > a));
	if (a >= 0) {
		CHECK(bench_pin_self(a) == 0);
		CHECK(sched_getcpu() == a);
	}
	CHECK(bench_pin_self(CPU_SETSIZE - 1) < 0 || CPU_SETSIZE - 1 == a);
}

static void test_skipped(void)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		exit(bench_skipped("no %s here", "feature"));
	int status;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == BENCH_EXIT_SKIPPED);
	pid = fork();
	if (pid == 0)
		bench_die("dying on purpose (%d)", 1);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

int main(void)
{
	test_clock();
	test_parse();
	test_percentile();
	test_io();
	test_shared_and_pinning();
	test_skipped();
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	else
		printf("bench/lib: all checks passed\n");
	return failures != 0;
}
