#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/python.sh BUILDDIR [pytest args...]: build the Python package
# (python/: its C extension over BUILDDIR's libsemclient, -Werror) into
# BUILDDIR/python and run its pytest suite against BUILDDIR's semd, offline,
# with Debian's /usr/bin/python3 and python3-pytest (scripts/deps.sh).
#   PYTHON=...        another interpreter (default /usr/bin/python3)
#   SEMD_PY_BUILD_ONLY=1  build only (make python)
#   SEMD_PY_LINT=1    first lint the extension (clang-tidy, cppcheck) and the
#                     Python (pyflakes3), as tests/lint.sh does the C code
#   SEMD_PY_ASAN=1    BUILDDIR is an ASan+UBSan build (--enable-sanitizers
#                     with clang): the extension is built with the same
#                     sanitizers and the interpreter runs with the clang ASan
#                     runtime preloaded; leak detection stays off for the
#                     interpreter itself (the tests count the extension's
#                     handles and callbacks instead).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: tests/python.sh BUILDDIR [pytest args]}" && pwd)
shift
py=${PYTHON:-/usr/bin/python3}
"$py" -c 'import pytest' 2>/dev/null ||
	{ echo "tests/python.sh: no pytest for $py (apt-get install python3-pytest)" >&2; exit 1; }
out=$build/python
if [ "${SEMD_PY_LINT:-0}" = 1 ]; then
	# The extension as tests/lint.sh checks the rest: clang-tidy with the
	# project's .clang-tidy, cppcheck (told Python's macros), and pyflakes.
	inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
	if ! tidy=$(clang-tidy --quiet --warnings-as-errors='*' "$top"/python/src/*.c -- \
		-std=c11 -D_GNU_SOURCE -I"$inc" -I"$top/client" 2>&1); then
		printf '%s\n' "$tidy" >&2
		echo "tests/python.sh: clang-tidy findings (above)" >&2
		exit 1
	fi
	cppcheck -q --enable=warning,performance,portability --error-exitcode=1 --std=c11 \
		-I "$top/client" "-DPy_RETURN_NONE=return Py_None" "-DPy_BEGIN_ALLOW_THREADS={" \
		"-DPy_END_ALLOW_THREADS=}" "$top"/python/src/*.c ||
		{ echo "tests/python.sh: cppcheck findings (above)" >&2; exit 1; }
	pyflakes3 "$top"/python/semclient/*.py "$top"/python/tests/*.py "$top/python/setup.py" \
		"$top/examples/jobs.py" "$top"/bench/python-bench.py ||
		{ echo "tests/python.sh: pyflakes findings (above)" >&2; exit 1; }
	echo "tests/python.sh: lint clean"
fi
rm -rf "$out/lib" "$out/tmp"
mkdir -p "$out"
export SEMCLIENT_BUILD_DIR="$build" SEMCLIENT_WERROR=1 PYTHONDONTWRITEBYTECODE=1
if [ "${SEMD_PY_ASAN:-0}" = 1 ]; then
	rt=$(clang -print-file-name=libclang_rt.asan-x86_64.so)
	[ -f "$rt" ] || { echo "tests/python.sh: no $rt (apt-get install libclang-rt-14-dev)" >&2; exit 1; }
	san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all -g -O1"
	(cd "$top/python" && CC=clang CFLAGS="$san" LDSHARED="clang -shared" LDFLAGS="-shared-libasan $san" \
		"$py" setup.py -q build_ext -b "$out/lib" -t "$out/tmp") 2>&1 | grep -v "Beta\|byte-compil" || true
	export LD_PRELOAD="$rt"
	export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:${ASAN_OPTIONS:-}"
	export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
else
	(cd "$top/python" && "$py" setup.py -q build_ext -b "$out/lib" -t "$out/tmp") 2>&1 |
		grep -v "Beta\|byte-compil" || true
fi
[ -n "$(ls "$out"/lib/semclient/_semclient*.so 2>/dev/null)" ] ||
	{ echo "tests/python.sh: the extension did not build" >&2; exit 1; }
cp "$top"/python/semclient/*.py "$top"/python/semclient/py.typed "$out/lib/semclient/"
cp "$top"/python/semclient/*.pyi "$out/lib/semclient/"
[ "${SEMD_PY_BUILD_ONLY:-0}" = 1 ] && { echo "semclient built in $out/lib"; exit 0; }
export PYTHONPATH="$out/lib" SEMD="$build/semd" SEMCTL="$build/semctl" SEMD_TOP="$top"
cd "$top/python/tests"
# bounded: the suite takes a minute or two; a hang must not stall CI
exec timeout -k 10 "${SEMD_PY_TIMEOUT:-900}" "$py" -m pytest -p no:cacheprovider -q -ra "$@"
