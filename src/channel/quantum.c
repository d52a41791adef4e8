/* SPDX-License-Identifier: MIT */
/*
 * channel/quantum.c - the operation quantum (quantum.h).
 */
#include "quantum.h"

#include "base/park.h"

_Thread_local uint32_t canal__op_budget
	__attribute__((tls_model("initial-exec"))) = CANAL__OP_QUANTUM;

void canal__quantum_over(void)
{
	canal__op_budget = CANAL__OP_QUANTUM;
	(void)canal__yield_to_ready();
}
