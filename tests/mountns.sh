# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=sh
# tests/mountns.sh - sourced first by the tests that mount file systems of
# their own (a full disk: tests/daemon/fulldisk.sh, tests/cluster/fulldisk.sh),
# before tests/lib.sh: skipped (77) without root, without unshare, mount, dd
# or one of $MOUNTNS_TOOLS, or where no private mount namespace can be made
# (a container, a chroot without the right); otherwise the test runs again
# inside a new one, where its mounts are its own and go with it.
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (a private mount namespace and a tmpfs)"
	exit 77
fi
for tool in unshare mount dd ${MOUNTNS_TOOLS:-}; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool is not installed"; exit 77; }
done
if [ -z "${SEMD_MOUNTNS:-}" ]; then
	unshare -m --propagation private true 2>/dev/null ||
		{ echo "SKIP: no private mount namespace here (unshare -m)"; exit 77; }
	SEMD_MOUNTNS=1 exec unshare -m --propagation private "$0" "$@"
fi
