# SPDX-License-Identifier: BSD-2-Clause
# tests/tap.sh - the checks' "ok - ..." / "not ok - ..." lines and their
# counts, t_passed and t_failed. Sourced by tests/lib.sh, and on its own by
# packaging/tests/nspawn-inside.sh, which runs inside a container without
# the rest of the tree (nothing here may depend on it).
t_failed=0
t_passed=0

# ok COND-DESCRIPTION CMD... : run CMD, count a pass or a failure.
ok() {
	desc=$1; shift
	if "$@"; then t_passed=$((t_passed + 1)); echo "ok - $desc"
	else t_failed=$((t_failed + 1)); echo "not ok - $desc"; fi
}

# expect_eq DESC WANT GOT
expect_eq() {
	if [ "$2" = "$3" ]; then t_passed=$((t_passed + 1)); echo "ok - $1"
	else t_failed=$((t_failed + 1)); echo "not ok - $1: want '$2', got '$3'"; fi
}
