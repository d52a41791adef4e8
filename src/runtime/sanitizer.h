/* SPDX-License-Identifier: MIT */
/*
 * runtime/sanitizer.h - telling ASan and TSan about context switches.
 *
 * ASan must know which stack is current (or it takes a task's frames for
 * a stack overflow of the thread, and its fake stacks go wrong): before a
 * switch, __sanitizer_start_switch_fiber(save, bottom, size) of the stack
 * we switch to (save NULL when the current context never comes back: a
 * task that ended); first thing after a switch, in the resumed context,
 * __sanitizer_finish_switch_fiber(save). TSan keeps a fiber per context:
 * __tsan_create_fiber per task, __tsan_switch_to_fiber before each switch
 * (it also orders what the two contexts did, like a lock hand-off),
 * __tsan_destroy_fiber once the task has ended. Without sanitizers these
 * are empty.
 */
#ifndef CANAL_RUNTIME_SANITIZER_H
#define CANAL_RUNTIME_SANITIZER_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#define CANAL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CANAL_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define CANAL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CANAL_TSAN 1
#endif
#endif

#ifdef CANAL_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef CANAL_TSAN
#include <sanitizer/tsan_interface.h>
#endif

static inline void san_start_switch(void **fake_stack_save, const void *bottom,
				    size_t size)
{
#ifdef CANAL_ASAN
	__sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
#else
	(void)fake_stack_save, (void)bottom, (void)size;
#endif
}

static inline void san_finish_switch(void *fake_stack_save)
{
#ifdef CANAL_ASAN
	__sanitizer_finish_switch_fiber(fake_stack_save, NULL, NULL);
#else
	(void)fake_stack_save;
#endif
}

static inline void *san_fiber_create(void)
{
#ifdef CANAL_TSAN
	return __tsan_create_fiber(0);
#else
	return NULL;
#endif
}

static inline void *san_fiber_current(void)
{
#ifdef CANAL_TSAN
	return __tsan_get_current_fiber();
#else
	return NULL;
#endif
}

static inline void san_fiber_switch(void *fiber)
{
#ifdef CANAL_TSAN
	__tsan_switch_to_fiber(fiber, 0);
#else
	(void)fiber;
#endif
}

static inline void san_fiber_destroy(void *fiber)
{
#ifdef CANAL_TSAN
	if (fiber)
		__tsan_destroy_fiber(fiber);
#else
	(void)fiber;
#endif
}

#if defined(CANAL_ASAN) || defined(CANAL_TSAN)
#define CANAL_RUNTIME_SANITIZED 1
#endif

#endif /* CANAL_RUNTIME_SANITIZER_H */
