#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/chroot.sh [--fresh] ROOT SUITE CMD...: run CMD (a shell command line)
# as root in a minimal Debian SUITE (trixie, bookworm, ...) at ROOT, in a copy
# of this source tree (/semd there, cwd).
#  - ROOT is made with `debootstrap --variant=minbase SUITE` from the Debian
#    mirror the system's sources name, unless it holds a finished one already
#    (--fresh removes it first).
#  - The files git knows (tracked, and new ones not ignored) are copied to
#    ROOT/semd over what is there, their times kept, so a build in it is
#    incremental.
#  - CMD runs in private mount and PID namespaces with /proc, /sys, /dev,
#    /dev/pts, a new /dev/shm and a new /tmp mounted: when it ends, fails or
#    times out (CHROOT_TIMEOUT seconds, default 3600) the kernel takes the
#    namespaces down, every process in them killed and every mount gone, so
#    nothing stays mounted under ROOT whatever happened.
set -eu
fresh=no
[ "${1:-}" = --fresh ] && { fresh=yes; shift; }
[ $# -ge 3 ] || { echo "usage: $0 [--fresh] ROOT SUITE CMD..." >&2; exit 64; }
[ "$(id -u)" = 0 ] || { echo "$0: needs root (debootstrap, chroot, mount)" >&2; exit 77; }
root=$1 suite=$2; shift 2
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$(dirname "$root")"
root=$(cd "$(dirname "$root")" && pwd)/$(basename "$root")

# mounted_under DIR: something is mounted at or below DIR (seen from here).
mounted_under() {
	awk -v d="$1" '$2 == d || index($2, d "/") == 1 { found = 1 } END { exit !found }' /proc/self/mounts
}
if mounted_under "$root"; then
	echo "$0: something is mounted under $root: not touching it" >&2; exit 1
fi

# The system's Debian mirror (its deb822 or one-line sources), else Debian's.
mirror() {
	{ sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\/\?\)\([[:space:]].*\)\?$/\1/p' \
		/etc/apt/sources.list.d/*.sources 2>/dev/null
	  sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\/debian\/\?\)[[:space:]].*/\2/p' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
	  echo http://deb.debian.org/debian; } | head -n 1
}

[ $fresh = no ] || rm -rf "$root"
# debootstrap removes ROOT/debootstrap when it has finished.
if [ ! -x "$root/usr/bin/apt-get" ] || [ -e "$root/debootstrap" ]; then
	command -v debootstrap >/dev/null || { echo "$0: debootstrap is missing: scripts/deps.sh" >&2; exit 69; }
	rm -rf "$root"
	m=$(mirror)
	echo "chroot: debootstrap --variant=minbase $suite $root $m"
	t0=$(date +%s)
	debootstrap --variant=minbase "$suite" "$root" "$m" >"$root.debootstrap.log" 2>&1 ||
		{ tail -n 20 "$root.debootstrap.log"; exit 1; }
	echo "chroot: debootstrap took $(($(date +%s) - t0)) s"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"

echo "chroot: copying the source tree to $root/semd"
mkdir -p "$root/semd"
(cd "$top" && if git rev-parse --git-dir >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -
else
	tar --exclude=./build -cf - .
fi) | tar -x -C "$root/semd"

# In the namespaces: mount, then chroot from a shell that stays PID 1. ROOT
# is bound on itself first, so that / is a mount point in the chroot (a test
# that makes a mount namespace of its own sets its propagation).
# shellcheck disable=SC2016
timeout --kill-after=30 "${CHROOT_TIMEOUT:-3600}" \
	unshare --mount --pid --kill-child --propagation private -- sh -euc '
	r=$1; shift
	mount --bind "$r" "$r"
	mount -t proc proc "$r/proc"
	mount -t sysfs sysfs "$r/sys"
	mount --bind /dev "$r/dev"
	mount --bind /dev/pts "$r/dev/pts"
	mount -t tmpfs -o mode=1777,nosuid,nodev shm "$r/dev/shm"
	mount -t tmpfs -o mode=1777,nosuid,nodev tmp "$r/tmp"
	chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		LANG=C.UTF-8 TERM="${TERM:-dumb}" JOBS="${JOBS:-2}" CI="${CI:-}" \
		/bin/sh -c "cd /semd && $*"
' sh "$root" "$*"
