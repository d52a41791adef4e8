/* SPDX-License-Identifier: MIT */
/*
 * runtime/context.h - canal's context switch: save the callee-saved
 * registers on the current stack, store the stack pointer, load another,
 * restore its registers, return into it. No signal mask, no syscall (what
 * makes swapcontext slow). x86-64 and aarch64, in context.c.
 */
#ifndef CANAL_RUNTIME_CONTEXT_H
#define CANAL_RUNTIME_CONTEXT_H

/* Save the current context's stack pointer in *save_sp and resume the
 * context whose saved stack pointer is to_sp. Returns when some later
 * switch resumes *save_sp. */
void canal__ctx_switch(void **save_sp, void *to_sp);

/* Prepare a stack whose highest usable address is top so that the first
 * switch to the returned stack pointer calls entry(arg) on it. entry must
 * never return (it switches away for the last time). */
void *canal__ctx_make(void *top, void (*entry)(void *), void *arg);

#endif /* CANAL_RUNTIME_CONTEXT_H */
