/* check.h - the minimal assertion and thread helpers of canal's tests. */
#ifndef CANAL_TEST_CHECK_H
#define CANAL_TEST_CHECK_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Which sanitizer this test was built with (GCC's and Clang's ways of
 * saying so): SANITIZED under ASan or TSan, UNDER_TSAN under TSan. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                            \
			abort();                                             \
		}                                                            \
	} while (0)

#define CHECK_EQ(a, b)                                                       \
	do {                                                                 \
		long long a_ = (long long)(a), b_ = (long long)(b);          \
		if (a_ != b_) {                                              \
			fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, " \
				"%s == %lld\n", __FILE__, __LINE__, #a, a_,   \
				#b, b_);                                     \
			abort();                                             \
		}                                                            \
	} while (0)

/* A repeatable pseudo-random sequence (xorshift64*): *state is the seed
 * (non-zero) and the generator's state. */
static inline uint64_t check_rand64(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545f4914f6cdd1dull;
}

static inline pthread_t spawn(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	int r = pthread_create(&t, NULL, fn, arg);
	if (r) {
		fprintf(stderr, "pthread_create: %s\n", strerror(r));
		abort();
	}
	return t;
}

static inline void *join(pthread_t t)
{
	void *ret;
	pthread_join(t, &ret);
	return ret;
}

/* fork() for tests: the child dies with the test (SIGKILL when the parent
 * exits, even by abort), so a failed check never leaves processes behind
 * that hold CTest's output pipe open. */
static inline pid_t test_fork(void)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(99); /* the parent died before prctl */
	}
	return pid;
}

/* Scale for stress tests: CANAL_STRESS=1 runs the long counts. */
static inline int stress_scale(void)
{
	const char *s = getenv("CANAL_STRESS");
	return s && *s && *s != '0' ? 10 : 1;
}

#define TEST_DONE(name)                                                      \
	do {                                                                 \
		printf("%s: all checks passed\n", name);                     \
		return 0;                                                    \
	} while (0)

#endif
