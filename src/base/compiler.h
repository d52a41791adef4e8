/* SPDX-License-Identifier: MIT */
/* compiler.h - compiler helpers shared by every layer of canal. */
#ifndef CANAL_BASE_COMPILER_H
#define CANAL_BASE_COMPILER_H

/* The one export macro: symbols are hidden unless marked (the library is
 * built with -fvisibility=hidden); every public canal_ function has it. */
#define CANAL_EXPORT __attribute__((visibility("default")))

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* A cache line on x86-64 and most aarch64 parts. */
#define CANAL_CACHELINE 64

#endif /* CANAL_BASE_COMPILER_H */
