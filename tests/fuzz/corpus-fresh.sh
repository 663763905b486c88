#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The committed seed corpus is what tests/fuzz/gen-corpus writes today: when
# semd.proto or the generator changes, regenerate it with
#   tests/fuzz/gen-corpus "$top_srcdir/tests/fuzz/corpus"
. "$top_srcdir/tests/lib.sh"

ok "gen-corpus runs" "$top_builddir/tests/fuzz/gen-corpus" "$T/corpus"
for target in fuzz_frame fuzz_dispatch fuzz_entry fuzz_snap fuzz_peer; do
	ok "$target seeds are up to date" \
		diff -r "$top_srcdir/tests/fuzz/corpus/$target" "$T/corpus/$target"
done
t_done
