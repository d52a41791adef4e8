/* SPDX-License-Identifier: MIT */
/*
 * context.c - the context switch of context.h, a few instructions per
 * architecture (as Boost.Context's fcontext and Go's gogo do).
 *
 * Saved: the registers the C ABI says a call preserves. x86-64 SysV: rbx,
 * rbp, r12-r15, plus the SSE control/status word (MXCSR) and the x87
 * control word, which are callee-saved too. aarch64 AAPCS64: x19-x28, the
 * frame pointer x29, the link register x30, the low halves of v8-v15
 * (d8-d15), and FPCR and FPSR (a task's floating-point environment, as a
 * thread's). Everything else is caller-saved: the compiler has already
 * spilled what it needs before calling canal__ctx_switch.
 *
 * x86-64: loading MXCSR and the x87 control word costs more than the rest
 * of the switch (each load waits for the floating-point work in flight),
 * and they almost never differ between two tasks: both are saved in one
 * zeroed word (MXCSR, the control word, two zero bytes) and loaded only
 * if the incoming task's word differs from the outgoing one's, which is
 * exactly when loading it changes anything. The outgoing words are read
 * before its sp is published: once published, its stack is no longer
 * this switch's to read (nothing resumes a task before its switch ends
 * today, but that is the scheduler's rule, not this function's).
 * aarch64: FPCR (rounding, traps, flush-to-zero) and FPSR (sticky
 * flags) are switched the same way, each written only when it differs
 * (the outgoing values are kept in registers).
 *
 * A new context: canal__ctx_make writes a frame that looks like one saved
 * by canal__ctx_switch, whose return address is canal__ctx_trampoline and
 * whose saved registers hold entry and arg; the trampoline calls entry(arg)
 * with the stack aligned as the ABI wants (16 bytes at the call).
 */
#include "runtime/context.h"

#include <stdint.h>
#include <string.h>

void canal__ctx_trampoline(void);

#if defined(__x86_64__)

__asm__(".text\n"
	".globl canal__ctx_switch\n"
	".hidden canal__ctx_switch\n"
	".type canal__ctx_switch,@function\n"
	"canal__ctx_switch:\n"
	"	pushq %rbp\n"
	"	pushq %rbx\n"
	"	pushq %r12\n"
	"	pushq %r13\n"
	"	pushq %r14\n"
	"	pushq %r15\n"
	"	pushq $0\n"
	"	stmxcsr (%rsp)\n"
	"	fnstcw 4(%rsp)\n"
	"	movl (%rsp), %eax\n"
	"	movzwl 4(%rsp), %ecx\n"
	"	movq %rsp, (%rdi)\n"
	"	movq %rsi, %rsp\n"
	"	cmpl (%rsp), %eax\n"
	"	jne 2f\n"
	"	cmpw 4(%rsp), %cx\n"
	"	jne 2f\n"
	"1:	addq $8, %rsp\n"
	"	popq %r15\n"
	"	popq %r14\n"
	"	popq %r13\n"
	"	popq %r12\n"
	"	popq %rbx\n"
	"	popq %rbp\n"
	"	ret\n"
	"2:	ldmxcsr (%rsp)\n"
	"	fldcw 4(%rsp)\n"
	"	jmp 1b\n"
	".size canal__ctx_switch, .-canal__ctx_switch\n"
	".globl canal__ctx_trampoline\n"
	".hidden canal__ctx_trampoline\n"
	".type canal__ctx_trampoline,@function\n"
	"canal__ctx_trampoline:\n"
	"	movq %r12, %rdi\n"
	"	callq *%r13\n"
	"	ud2\n"
	".size canal__ctx_trampoline, .-canal__ctx_trampoline\n");

void *canal__ctx_make(void *top, void (*entry)(void *), void *arg)
{
	/* Frame, from the new stack pointer up: control words, r15, r14,
	 * r13 = entry, r12 = arg, rbx, rbp = 0 (ends frame-pointer walks),
	 * return address = trampoline. After its ret, rsp = sp + 64, a
	 * multiple of 16, so the trampoline's call aligns the callee. */
	uintptr_t t = ((uintptr_t)top & ~(uintptr_t)15) - 16;
	uint64_t *sp = (uint64_t *)(t - 64);
	uint32_t mxcsr = 0x1f80;  /* all exceptions masked, round to nearest */
	uint16_t fpucw = 0x037f;  /* the x87 default */
	memcpy((char *)sp, &mxcsr, 4);
	memcpy((char *)sp + 4, &fpucw, 2);
	memset((char *)sp + 6, 0, 2);
	sp[1] = 0;			  /* r15 */
	sp[2] = 0;			  /* r14 */
	sp[3] = (uint64_t)(uintptr_t)entry; /* r13 */
	sp[4] = (uint64_t)(uintptr_t)arg;   /* r12 */
	sp[5] = 0;			  /* rbx */
	sp[6] = 0;			  /* rbp */
	sp[7] = (uint64_t)(uintptr_t)canal__ctx_trampoline;
	return sp;
}

#elif defined(__aarch64__)

__asm__(".text\n"
	".globl canal__ctx_switch\n"
	".hidden canal__ctx_switch\n"
	".type canal__ctx_switch,%function\n"
	"canal__ctx_switch:\n"
	"	sub sp, sp, #176\n"
	"	stp x19, x20, [sp, #0]\n"
	"	stp x21, x22, [sp, #16]\n"
	"	stp x23, x24, [sp, #32]\n"
	"	stp x25, x26, [sp, #48]\n"
	"	stp x27, x28, [sp, #64]\n"
	"	stp x29, x30, [sp, #80]\n"
	"	stp d8, d9, [sp, #96]\n"
	"	stp d10, d11, [sp, #112]\n"
	"	stp d12, d13, [sp, #128]\n"
	"	stp d14, d15, [sp, #144]\n"
	"	mrs x3, fpcr\n"
	"	mrs x4, fpsr\n"
	"	stp x3, x4, [sp, #160]\n"
	"	mov x2, sp\n"
	"	str x2, [x0]\n"
	"	mov sp, x1\n"
	"	ldp x5, x6, [sp, #160]\n"
	"	cmp x5, x3\n"
	"	b.eq 1f\n"
	"	msr fpcr, x5\n"
	"1:	cmp x6, x4\n"
	"	b.eq 2f\n"
	"	msr fpsr, x6\n"
	"2:\n"
	"	ldp x19, x20, [sp, #0]\n"
	"	ldp x21, x22, [sp, #16]\n"
	"	ldp x23, x24, [sp, #32]\n"
	"	ldp x25, x26, [sp, #48]\n"
	"	ldp x27, x28, [sp, #64]\n"
	"	ldp x29, x30, [sp, #80]\n"
	"	ldp d8, d9, [sp, #96]\n"
	"	ldp d10, d11, [sp, #112]\n"
	"	ldp d12, d13, [sp, #128]\n"
	"	ldp d14, d15, [sp, #144]\n"
	"	add sp, sp, #176\n"
	"	ret\n"
	".size canal__ctx_switch, .-canal__ctx_switch\n"
	".globl canal__ctx_trampoline\n"
	".hidden canal__ctx_trampoline\n"
	".type canal__ctx_trampoline,%function\n"
	"canal__ctx_trampoline:\n"
	"	mov x0, x20\n"
	"	blr x19\n"
	"	brk #0\n"
	".size canal__ctx_trampoline, .-canal__ctx_trampoline\n");

void *canal__ctx_make(void *top, void (*entry)(void *), void *arg)
{
	/* Frame: x19 = entry, x20 = arg, x29 = 0, x30 = trampoline, FPCR
	 * and FPSR = 0 (round to nearest, no traps, flags clear: Linux's
	 * defaults). */
	uintptr_t t = ((uintptr_t)top & ~(uintptr_t)15) - 16;
	uint64_t *sp = (uint64_t *)(t - 176);
	memset(sp, 0, 176);
	sp[0] = (uint64_t)(uintptr_t)entry;
	sp[1] = (uint64_t)(uintptr_t)arg;
	sp[10] = 0;
	sp[11] = (uint64_t)(uintptr_t)canal__ctx_trampoline;
	return sp;
}

#else
#error "canal's runtime: no context switch for this architecture (x86-64, aarch64)"
#endif
