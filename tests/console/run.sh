#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The web console in a real browser (tests/console/console.mjs): installs the
# test's npm dev dependencies from the committed lockfile (npm ci, once per
# lockfile) under BUILD_DIR/console, then drives Debian's headless Chromium
# against the semd, semctl and semd_probe of BUILD_DIR.
# Usage: tests/console/run.sh BUILD_DIR
#   SEMD_CONSOLE_SHOTS=DIR   also write the screenshots of the main views there
#                            (doc/ keeps them: tests/console/run.sh build/normal
#                            with SEMD_CONSOLE_SHOTS=doc)
set -eu
if [ $# -ne 1 ]; then
	echo "usage: $0 BUILD_DIR" >&2
	exit 2
fi
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "$1" && pwd)
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
for t in node npm "$CHROMIUM"; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "console: $t is not installed (scripts/deps.sh installs it)" >&2
		exit 1
	fi
done
for f in semd semctl tests/daemon/semd_probe; do
	if [ ! -x "$B/$f" ]; then
		echo "console: $B/$f is not built" >&2
		exit 1
	fi
done

# The dev dependencies, exactly as locked; again only when the lock changed.
D=$B/console/npm
mkdir -p "$D"
if ! cmp -s "$TOP/tests/console/package-lock.json" "$D/package-lock.json" ||
    [ ! -d "$D/node_modules/puppeteer-core" ]; then
	cp "$TOP/tests/console/package.json" "$TOP/tests/console/package-lock.json" \
	    "$TOP/tests/console/.npmrc" "$D/"
	(cd "$D" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi

if [ -n "${SEMD_CONSOLE_SHOTS:-}" ]; then
	mkdir -p "$SEMD_CONSOLE_SHOTS"
	SEMD_CONSOLE_SHOTS=$(cd "$SEMD_CONSOLE_SHOTS" && pwd)
	export SEMD_CONSOLE_SHOTS
fi
CONSOLE_NODE_MODULES=$D/node_modules SEMD=$B/semd SEMCTL=$B/semctl \
PROBE=$B/tests/daemon/semd_probe CHROMIUM=$CHROMIUM \
	exec node "$TOP/tests/console/console.mjs"
