#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Static analysis of semd's own C code: clang-tidy (checks in .clang-tidy at the top)
# and cppcheck; and the daemon's shape: no circle of calls between the files of
# daemon/state/, its rooms calling one way (tests/callgraph.py, from gcc's call
# graph). Exits non-zero on any finding.
# Usage: tests/lint.sh BUILD_DIR
# BUILD_DIR is configured if it has no Makefile or was configured with LTO; if
# it has no compile_commands.json, it is cleaned and built again under bear to
# record one. LINT_JOBS (default 2) clang-tidy processes run at once.
set -eu
if [ $# -ne 1 ]; then
	echo "usage: $0 BUILD_DIR" >&2
	exit 2
fi
TOP=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
B=$(cd "$1" && pwd)
JOBS=${LINT_JOBS:-2}
DIRS="arch core proto daemon client cli security bench examples"

for t in bear clang-tidy cppcheck python3 make gcc; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "lint: $t is not installed (scripts/deps.sh installs it)" >&2
		exit 1
	fi
done

cd "$B"
mkdir -p lint
# Without GCC's LTO flags, which clang-tidy's clang would warn of: a build
# directory configured otherwise (by an older tests/lint.sh) is configured again.
if [ ! -f Makefile ] || ! grep -q -- '--disable-lto' config.status 2>/dev/null; then
	echo "lint: configuring $B"
	"$TOP/configure" -q --disable-lto
	rm -f compile_commands.json
fi

# Record compile_commands.json; bear sees only what the compiler runs for, so
# everything is built afresh.
record() {
	echo "lint: building $B under bear for compile_commands.json"
	if ! { make -s clean && bear --output compile_commands.json.tmp -- make -s -j"$JOBS"; } \
	    >lint/build.log 2>&1; then
		tail -n 30 lint/build.log >&2
		echo "lint: the build failed (full log: $B/lint/build.log)" >&2
		exit 1
	fi
	mv compile_commands.json.tmp compile_commands.json
}
recorded=0
if [ ! -f compile_commands.json ]; then
	record
	recorded=1
fi

# Our sources: not generated (*.pb-c.c), not tests (tests/, test-*.c, test_*.c).
# One compile command per file, one file per clang-tidy process: clang-tidy 14
# carries analyzer state (valist.Uninitialized) from one translation unit into the
# next, and libtool lists PIC and non-PIC commands for the same file.
cd "$TOP"
# shellcheck disable=SC2086
find $DIRS -name '*.c' ! -name '*.pb-c.c' ! -name 'test-*' ! -name 'test_*' |
	LC_ALL=C sort >"$B/lint/sources"
one_each() {
python3 - "$TOP" "$B" <<'EOF'
import json, os, sys
top, b = sys.argv[1], sys.argv[2]
with open(os.path.join(b, 'compile_commands.json')) as f:
    db = json.load(f)
with open(os.path.join(b, 'lint', 'sources')) as f:
    want = [os.path.join(top, line.strip()) for line in f if line.strip()]
seen = {}
for e in db:
    path = os.path.normpath(os.path.join(e['directory'], e['file']))
    if path in want and path not in seen:
        e['file'] = path
        seen[path] = e
found = [p for p in want if p in seen]
with open(os.path.join(b, 'lint', 'compile_commands.json'), 'w') as f:
    json.dump([seen[p] for p in found], f, indent=1)
with open(os.path.join(b, 'lint', 'files'), 'w') as f:
    f.write('\n'.join(found) + '\n')
with open(os.path.join(b, 'lint', 'unbuilt'), 'w') as f:
    f.write(''.join(p + '\n' for p in want if p not in seen))
EOF
}
one_each
# A file missing from compile_commands.json that was not missing when it was
# recorded is new: record again. What is missing right after a recording is not
# built in this configuration (e.g. bench/drv_semd.c, a driver for an external
# load generator).
if [ "$recorded" = 0 ] && ! cmp -s "$B/lint/unbuilt" "$B/lint/unbuilt.recorded"; then
	(cd "$B" && record)
	recorded=1
	one_each
fi
[ "$recorded" = 0 ] || cp "$B/lint/unbuilt" "$B/lint/unbuilt.recorded"
if [ -s "$B/lint/unbuilt" ]; then
	echo "lint: not built in this configuration, so not analysed by clang-tidy:"
	sed 's/^/  /' "$B/lint/unbuilt"
fi

fail=0
n=$(wc -l <"$B/lint/files")
echo "lint: clang-tidy on $n files"
if ! xargs -P"$JOBS" -n1 clang-tidy -p "$B/lint" --quiet --warnings-as-errors='*' \
    <"$B/lint/files" >"$B/lint/clang-tidy.log" 2>&1; then
	fail=1
fi
grep -Ev '^[0-9]+ (warning|error)s? (generated|treated as errors)\.$' \
	"$B/lint/clang-tidy.log" || true
[ "$fail" = 0 ] && echo "lint: clang-tidy: clean" || echo "lint: clang-tidy: FINDINGS (above)"

echo "lint: cppcheck"
# shellcheck disable=SC2086
if cppcheck -q --enable=warning,performance,portability --inline-suppr --error-exitcode=1 \
    -I. -I"$B" -D__GNUC__ -DHAVE_CONFIG_H -DPROTOBUF_C_VERSION_NUMBER=1004001 \
    -DPROTOBUF_C_MIN_COMPILER_VERSION=1000000 --suppress=missingIncludeSystem $DIRS; then
	echo "lint: cppcheck: clean"
else
	echo "lint: cppcheck: FINDINGS (above)"
	fail=1
fi

echo "lint: the daemon's calls between files"
if python3 "$TOP/tests/callgraph.py" "$B"; then
	echo "lint: callgraph: clean"
else
	echo "lint: callgraph: FINDINGS (above)"
	fail=1
fi
exit "$fail"
