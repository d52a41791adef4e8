/* SPDX-License-Identifier: MIT */
/*
 * uintr - Intel user interrupts (the ipc-bench seed's star). Needs a CPU
 * with UINTR (CPUID.(EAX=7,ECX=0):EDX[5], Sapphire Rapids and later) and a
 * kernel with the uintr patches (not in mainline Linux), which reports the
 * "uintr" flag in /proc/cpuinfo and whose headers define the uintr system
 * calls. Unknown system call numbers are never tried: when any of the
 * three is missing the program prints "SKIPPED (no uintr: <reason>)" and
 * exits 77. The transport itself is not written yet (no machine to test it
 * on): with all three present, it still SKIPs, saying so.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

static int cpu_has_uintr(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;

	if (__get_cpuid_max(0, NULL) < 7)
		return 0;
	__cpuid_count(7, 0, a, b, c, d);
	(void)a, (void)b, (void)c;
	return (d >> 5) & 1;
#else
	return 0;
#endif
}

static int kernel_reports_uintr(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		for (char *t = strtok(line, " \t\n:"); t; t = strtok(NULL, " \t\n:"))
			if (!strcmp(t, "uintr"))
				found = 1;
	}
	fclose(f);
	return found;
}

static int uintr_check(const struct ipc_opts *o, char *why, size_t whylen)
{
	(void)o;
#if !defined(__x86_64__)
	snprintf(why, whylen, "no uintr: not an x86-64 CPU");
#else
	if (!cpu_has_uintr())
		snprintf(why, whylen,
			 "no uintr: the CPU lacks UINTR (CPUID.7.0:EDX bit 5 "
			 "is 0)");
	else if (!kernel_reports_uintr())
		snprintf(why, whylen,
			 "no uintr: the kernel does not report the uintr flag "
			 "in /proc/cpuinfo (not in mainline Linux)");
#if !defined(__NR_uintr_register_handler)
	else
		snprintf(why, whylen,
			 "no uintr: the kernel headers define no uintr system "
			 "calls");
#else
	else
		snprintf(why, whylen,
			 "no uintr: the uintr transport is not implemented in "
			 "this build");
#endif
#endif
	return IPC_EXIT_SKIPPED;
}

static int uintr_open(void *shared, const struct ipc_opts *o, int side,
		      void **ctx)
{
	(void)shared, (void)o, (void)side, (void)ctx;
	return -ENOSYS;
}

static int uintr_send(void *ctx, const void *buf, size_t len)
{
	(void)ctx, (void)buf, (void)len;
	return -ENOSYS;
}

static ssize_t uintr_recv(void *ctx, void *buf, size_t len)
{
	(void)ctx, (void)buf, (void)len;
	return -ENOSYS;
}

static const struct ipc_method method = {
	.name = "uintr",
	.check = uintr_check,
	.open = uintr_open,
	.send = uintr_send,
	.recv = uintr_recv,
};

int main(int argc, char **argv)
{
	return ipc_main(argc, argv, &method);
}
