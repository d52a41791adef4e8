/* SPDX-License-Identifier: MIT */
/* transport.c - finding a seed program's transport by name (transport.h). */
#include "transport.h"

#include <string.h>

const struct fwd_transport *fwd_transport_find(const char *name)
{
	const struct fwd_transport *tables[] = { fwd_canal_transports, fwd_fd_transports };

	if (strcmp(name, fwd_floor_transport.name) == 0)
		return &fwd_floor_transport;
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		for (const struct fwd_transport *t = tables[i]; t->name; t++)
			if (strcmp(name, t->name) == 0)
				return t;
	return NULL;
}

const struct cc_transport *cc_transport_find(const char *name)
{
	if (strcmp(name, cc_canal_transport.name) == 0)
		return &cc_canal_transport;
	for (const struct cc_transport *t = cc_fd_transports; t->name; t++)
		if (strcmp(name, t->name) == 0)
			return t;
	return NULL;
}

void seed_program_name(const char *full, const char *program, char *buf,
		       size_t len, int *proc)
{
	size_t p = strlen(program), n = strlen(full);
	const char *suffix = "-proc";
	size_t s = strlen(suffix);

	if (n <= p + 1 || strncmp(full, program, p) != 0 || full[p] != '-')
		bench_die("program name '%s' is not %s-<transport>", full, program);
	full += p + 1;
	n -= p + 1;
	*proc = n > s && strcmp(full + n - s, suffix) == 0;
	if (*proc)
		n -= s;
	if (n >= len)
		bench_die("transport name too long in '%s'", full);
	memcpy(buf, full, n);
	buf[n] = '\0';
}
