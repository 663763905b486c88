/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/fuzz/fuzz.h - the entry point every fuzz target defines. libFuzzer
 * calls it with each input; tests/fuzz/replay.c calls it with every file of
 * the seed corpus, so `make check` exercises the same code with gcc.
 */
#ifndef SEMD_FUZZ_H
#define SEMD_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * fuzz_dispatch's input is a script of records, each starting with a control
 * byte c: client = c & 3 (FUZZ_CLIENTS sessions), kind = c >> 2 & 7:
 *   0..5  a framed request from that client follows (4-byte length + bytes);
 *   6     the clock advances: the next byte b gives b * b milliseconds, then
 *         every due deadline fires;
 *   7     that client disconnects and a new connection takes its place.
 */
#define FUZZ_CLIENTS		4
#define FUZZ_OP_REQUEST		0
#define FUZZ_OP_TICK		6
#define FUZZ_OP_RECONNECT	7
#define FUZZ_CTL(kind, client)	((uint8_t)((kind) << 2 | (client)))

/* Stop with a message: an invariant does not hold (a finding). */
#define FUZZ_ASSERT(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n",	\
		    __FILE__, __LINE__, #cond);				\
		abort();						\
	}								\
} while (0)

#endif
