/* test_ctx_fpstate.c - the context switch itself (context.c, below the
 * runtime) carries each context's floating-point environment: two
 * contexts switching to each other 1 000 times, one rounding upward with
 * FE_INEXACT raised, the other downward with its flags clear, each keeps
 * its own; then two contexts rounding the same way that differ by their
 * flags alone (the path where only the status word is loaded); a new
 * context starts rounding to nearest; the thread that made them gets its
 * own mode back. On x86-64 that is MXCSR and the x87
 * control word, on aarch64 FPCR and FPSR, each loaded only when it
 * differs from the outgoing context's. Runs without a runtime, so it can
 * be cross-built for aarch64 alone (it passed under qemu-aarch64; the
 * switch without FPCR/FPSR failed it). */
#include "check.h"
#include "runtime/context.h"
#include "runtime/sanitizer.h"
#include <fenv.h>
#include <stdio.h>
#include <stdlib.h>
static void *main_sp, *a_sp, *b_sp;
static int fails;
static volatile double one = 1.0, three = 3.0;
static double third(void) { volatile double q = one / three; return q; }
static void task_a(void *arg) {
	(void)arg;
	if (fegetround() != FE_TONEAREST) { puts("a: new context not nearest"); fails++; }
	fesetround(FE_UPWARD);
	feclearexcept(FE_ALL_EXCEPT);
	(void)third();
	for (int i = 0; i < 1000; i++) {
		(void)third();
		canal__ctx_switch(&a_sp, b_sp);
		if (fegetround() != FE_UPWARD) { printf("a: round %d lost upward\n", i); fails++; break; }
		if (!fetestexcept(FE_INEXACT)) { printf("a: round %d lost inexact\n", i); fails++; break; }
	}
	canal__ctx_switch(&a_sp, main_sp);
}
static void task_b(void *arg) {
	(void)arg;
	if (fegetround() != FE_TONEAREST) { puts("b: new context not nearest"); fails++; }
	fesetround(FE_DOWNWARD);
	feclearexcept(FE_ALL_EXCEPT);
	for (int i = 0; i < 1000; i++) {
		canal__ctx_switch(&b_sp, a_sp);
		if (fegetround() != FE_DOWNWARD) { printf("b: round %d lost downward\n", i); fails++; break; }
		if (fetestexcept(FE_ALL_EXCEPT)) { printf("b: round %d got flags\n", i); fails++; break; }
	}
	canal__ctx_switch(&b_sp, main_sp);
}
/* Phase 2: c and d round the same way (nearest, FPCR / MXCSR rounding
 * equal) and differ by their flags alone: c raises FE_INEXACT before
 * every switch, d keeps its flags clear. */
static void *c_sp, *d_sp;
static void task_c(void *arg) {
	(void)arg;
	for (int i = 0; i < 1000; i++) {
		(void)third();
		canal__ctx_switch(&c_sp, d_sp);
		if (!fetestexcept(FE_INEXACT)) { printf("c: round %d lost inexact\n", i); fails++; break; }
	}
	canal__ctx_switch(&c_sp, main_sp);
}
static void task_d(void *arg) {
	(void)arg;
	feclearexcept(FE_ALL_EXCEPT);
	for (int i = 0; i < 1000; i++) {
		canal__ctx_switch(&d_sp, c_sp);
		if (fetestexcept(FE_ALL_EXCEPT)) { printf("d: round %d got flags\n", i); fails++; break; }
		if (fegetround() != FE_TONEAREST) { printf("d: round %d not nearest\n", i); fails++; break; }
	}
	canal__ctx_switch(&d_sp, main_sp);
}

int main(void) {
#ifdef CANAL_RUNTIME_SANITIZED
	/* Bare switches, not announced to ASan or TSan as the runtime's are:
	 * test_task_fpenv checks the same through the runtime, annotated. */
	puts("test_ctx_fpstate: bare switches, skipped under sanitizers");
	return 0;
#endif
	static char sa[65536] __attribute__((aligned(16))), sb[65536] __attribute__((aligned(16)));
	fesetround(FE_TOWARDZERO);
	a_sp = canal__ctx_make(sa + sizeof sa, task_a, NULL);
	b_sp = canal__ctx_make(sb + sizeof sb, task_b, NULL);
	canal__ctx_switch(&main_sp, a_sp);
	if (fegetround() != FE_TOWARDZERO) { puts("main lost its mode"); fails++; }
	static char sc[65536] __attribute__((aligned(16))), sd[65536] __attribute__((aligned(16)));
	c_sp = canal__ctx_make(sc + sizeof sc, task_c, NULL);
	d_sp = canal__ctx_make(sd + sizeof sd, task_d, NULL);
	canal__ctx_switch(&main_sp, c_sp);
	if (fegetround() != FE_TOWARDZERO) { puts("main lost its mode (phase 2)"); fails++; }
	printf("%s (%d failures)\n", fails ? "FAIL" : "ok", fails);
	return fails != 0;
}
