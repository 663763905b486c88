# SPDX-License-Identifier: BSD-2-Clause
# tests/client/abi.sh - libsemclient keeps its ABI (issue 40): the built
# library is libsemclient.so.1, and it exports exactly the functions of
# tests/client/abi.txt, each under the symbol version the list gives, so
# that a program linked against an older release (its semc_down@
# LIBSEMCLIENT_1, semc_down_policy@LIBSEMCLIENT_1.4, ...) still finds every
# function it was linked with; each is declared in semclient.h, for its
# sources. test_downs calls the older downs and checks that they behave.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60

lib=$top_builddir/client/.libs/libsemclient.so.1
list=$top_srcdir/tests/client/abi.txt
ok "the library is built" [ -f "$lib" ]
expect_eq "its SONAME" "libsemclient.so.1" \
	"$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')"

# VERSION NAME of every function it defines and exports
objdump -T "$lib" | awk '$2 == "g" && $4 == ".text" { print $6, $7 }' | sort >"$T/exported"
grep -v '^#' "$list" | sort >"$T/recorded"
ok "the list is not empty" [ -s "$T/recorded" ]
missing=$(comm -13 "$T/exported" "$T/recorded")
expect_eq "every recorded function exported under its version" "" "$missing"
unrecorded=$(comm -23 "$T/exported" "$T/recorded")
expect_eq "every exported function recorded (a new one: a line in a new version)" "" \
	"$unrecorded"
undeclared=$(awk '{ print $2 }' "$T/recorded" | while read -r f; do
	grep -q "[ *]$f(" "$top_srcdir/client/semclient.h" || echo "$f"
done)
expect_eq "every recorded function declared in semclient.h" "" "$undeclared"
t_done
