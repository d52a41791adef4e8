// SPDX-License-Identifier: MIT
// fcontext-switch - the floor of a user-space context switch: Boost.Context's
// fcontext (jump_fcontext, the assembly under boost::context), two contexts
// bouncing back and forth. Prints "fcontext_switch <ns> ns/switch".
// Usage: fcontext-switch [rounds]
#include <boost/context/detail/fcontext.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace ctx = boost::context::detail;

static void bouncer(ctx::transfer_t t)
{
	for (;;)
		t = ctx::jump_fcontext(t.fctx, nullptr);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? std::atol(argv[1]) : 1000000;
	const std::size_t size = 64 * 1024;
	char *stack = static_cast<char *>(std::malloc(size));
	ctx::fcontext_t other = ctx::make_fcontext(stack + size, size, bouncer);
	ctx::transfer_t t = ctx::jump_fcontext(other, nullptr); // warm up
	auto t0 = std::chrono::steady_clock::now();
	for (long i = 0; i < rounds; i++)
		t = ctx::jump_fcontext(t.fctx, nullptr);
	auto t1 = std::chrono::steady_clock::now();
	double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
	// Each jump_fcontext is a switch there and one back: 2 switches.
	std::printf("fcontext_switch %.2f ns/switch\n", ns / (2.0 * rounds));
	std::free(stack);
	return 0;
}
