/* SPDX-License-Identifier: MIT */
/*
 * fuzz_driver.c - a deterministic mutation fuzzer for a libFuzzer-style
 * target, for builds without libFuzzer (gcc, sanitizer builds):
 *     fuzz_http_driver SECONDS CORPUS_DIR...
 * Runs every seed file, then mutations of them (byte flips, HTTP tokens
 * inserted, ranges deleted or repeated, seeds spliced) from a fixed PRNG
 * seed, until SECONDS pass. A failed check aborts (the target's BUG).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_IN 20000

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct seed {
	uint8_t *d;
	size_t n;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SECONDS CORPUS_DIR...\n", argv[0]);
		return 2;
	}
	double secs = atof(argv[1]);
	struct seed *seeds = NULL;
	size_t nseeds = 0;
	for (int a = 2; a < argc; a++) {
		DIR *d = opendir(argv[a]);
		if (!d) {
			perror(argv[a]);
			return 1;
		}
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char p[4096];
			snprintf(p, sizeof p, "%s/%s", argv[a], e->d_name);
			FILE *f = fopen(p, "rb");
			if (!f)
				continue;
			uint8_t *buf = malloc(MAX_IN);
			size_t n = fread(buf, 1, MAX_IN, f);
			fclose(f);
			seeds = realloc(seeds, (nseeds + 1) * sizeof *seeds);
			seeds[nseeds++] = (struct seed){buf, n};
		}
		closedir(d);
	}
	if (!nseeds) {
		fprintf(stderr, "no seeds\n");
		return 1;
	}
	for (size_t i = 0; i < nseeds; i++)
		LLVMFuzzerTestOneInput(seeds[i].d, seeds[i].n);
	static const char *tokens[] = {
		"\r\n", "\r\n\r\n", "\n", "\r", " ", ":", "%", "%2e", "%2f", "%00",
		"..", "/", "//", "?", "#", "GET", "HEAD", "POST", "HTTP/1.1",
		"HTTP/1.0", "Host: x\r\n", "Connection: close\r\n",
		"Content-Length: 0\r\n", "Transfer-Encoding: chunked\r\n", "\t",
		"\x7f", "\xff",
	};
	static uint8_t buf[MAX_IN];
	double end = now_s() + secs;
	unsigned long runs = 0;
	while (now_s() < end) {
		for (int k = 0; k < 1000; k++, runs++) {
			struct seed *s = &seeds[next() % nseeds];
			size_t n = s->n;
			memcpy(buf, s->d, n);
			int muts = 1 + (int)(next() % 8);
			for (int m = 0; m < muts; m++) {
				size_t pos = n ? next() % (n + 1) : 0;
				switch (next() % 6) {
				case 0: /* flip a byte */
					if (n)
						buf[pos % n] ^= (uint8_t)(1u << (next() % 8));
					break;
				case 1: /* random byte */
					if (n)
						buf[pos % n] = (uint8_t)next();
					break;
				case 2: { /* insert a token */
					const char *t = tokens[next() % (sizeof tokens / sizeof tokens[0])];
					size_t tl = strlen(t);
					if (n + tl <= MAX_IN) {
						memmove(buf + pos + tl, buf + pos, n - pos);
						memcpy(buf + pos, t, tl);
						n += tl;
					}
					break;
				}
				case 3: { /* delete a range */
					size_t len = next() % 16;
					if (pos + len <= n) {
						memmove(buf + pos, buf + pos + len, n - pos - len);
						n -= len;
					}
					break;
				}
				case 4: { /* repeat a range (grows toward the limits) */
					size_t len = 1 + next() % 64, times = 1 + next() % 200;
					if (pos + len <= n)
						for (size_t t = 0; t < times && n + len <= MAX_IN; t++) {
							memmove(buf + pos + len, buf + pos, n - pos);
							n += len;
						}
					break;
				}
				default: /* truncate */
					n = pos;
					break;
				}
			}
			LLVMFuzzerTestOneInput(buf, n);
		}
	}
	printf("fuzz_http_driver: %lu inputs from %zu seeds in %.0f s, no failure\n",
	       runs, nseeds, secs);
	for (size_t i = 0; i < nseeds; i++)
		free(seeds[i].d);
	free(seeds);
	return 0;
}
