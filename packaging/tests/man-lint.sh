#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# packaging/tests/man-lint.sh - every manual page in doc/ formats without a
# single groff warning (-ww), and man(1) can render it.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60

if ! command -v groff >/dev/null 2>&1; then
	echo "SKIP: groff is not installed"
	exit 77
fi
n=0
for page in "$top_srcdir"/doc/*.[1-8]; do
	[ -f "$page" ] || continue
	n=$((n + 1))
	name=$(basename "$page")
	warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
	expect_eq "$name: groff -ww warnings" "" "$warn"
	sec=${name##*.}
	ok "$name: .TH names section $sec" grep -q "^\.TH [^ ]* $sec " "$page"
	if command -v man >/dev/null 2>&1; then
		lines=$(MANWIDTH=80 man -l -Tutf8 "$page" 2>/dev/null | wc -l)
		ok "$name: man -l renders it ($lines lines)" test "$lines" -gt 10
	fi
done
ok "found the manual pages ($n)" test "$n" -ge 2
t_done
