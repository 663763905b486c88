#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# packaging/tests/nspawn.sh [DEBDIR] - the Debian packages under a real
# systemd: boots a Debian 12 container with systemd-nspawn --boot, installs
# semd, semctl and libsemclient1 in it and runs packaging/tests/nspawn-inside.sh
# there (socket activation, Type=notify readiness, reload, the watchdog
# restart, durable state when packaged, `systemd-analyze security`, removal).
#
# DEBDIR holds the .debs of packaging/build-deb.sh; without it they are
# built from the working tree first. Needs root, systemd-nspawn
# (systemd-container) and debootstrap; exits 77 (skipped) without them.
#
# The container's root is made by `debootstrap --variant=minbase` from the
# mirror this host's apt uses for Debian (its sources, read at run time;
# SEMD_NSPAWN_MIRROR overrides), with systemd and the packages' dependencies
# included, so the install needs no network. It is cached as a tarball in
# SEMD_NSPAWN_CACHE (default /var/cache/semd-nspawn), keyed by the package
# list: a rerun does not download again. Each run boots a fresh copy of it
# under /var/tmp, removed on every exit path, as the container is stopped.
# SEMD_NSPAWN_TIMEOUT bounds the boot and test (default 300 s).
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
suite=bookworm
cache=${SEMD_NSPAWN_CACHE:-/var/cache/semd-nspawn}
limit=${SEMD_NSPAWN_TIMEOUT:-300}
machine=semd-test-$$
t_start=$(date +%s)

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "not ok - $*"; exit 1; }
say() { echo "# $*"; }

[ $# -le 1 ] || { echo "usage: $0 [DEBDIR]" >&2; exit 64; }
[ "$(id -u)" = 0 ] || skip "needs root (systemd-nspawn, debootstrap)"
for tool in systemd-nspawn debootstrap dpkg-deb apt-get tar gzip timeout; do
	command -v "$tool" >/dev/null 2>&1 ||
		skip "$tool is missing (apt-get install systemd-container debootstrap)"
done

work=
nspawn_pid=
tail_pid=
cleanup() {
	rc=$?
	trap - EXIT INT TERM
	# The container: timeout(1) passes SIGTERM to systemd-nspawn, which
	# powers the container off; SIGKILL if it is not gone in 20 s.
	if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
		say "stopping the container"
		kill -TERM "$nspawn_pid" 2>/dev/null || true
		i=0
		while kill -0 "$nspawn_pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
		kill -KILL "$nspawn_pid" 2>/dev/null || true
		wait "$nspawn_pid" 2>/dev/null || true
	fi
	if [ -n "$tail_pid" ]; then kill "$tail_pid" 2>/dev/null || true; fi
	# Registered with machined (a host booted with systemd): make sure.
	if command -v machinectl >/dev/null 2>&1 && machinectl show "$machine" >/dev/null 2>&1; then
		machinectl terminate "$machine" 2>/dev/null || true
	fi
	rmdir "/run/systemd/nspawn/propagate/$machine" 2>/dev/null || true
	if [ -n "$work" ]; then
		# Nothing of the container may stay mounted below it.
		if grep -q " $work/" /proc/self/mounts; then
			echo "not ok - mounts left below $work: not removing it"; rc=1
		else
			rm -rf --one-file-system "$work"
		fi
	fi
	say "total $(($(date +%s) - t_start)) s"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

work=$(mktemp -d /var/tmp/semd-nspawn.XXXXXX)

# --- the packages ------------------------------------------------------------
version=$(dpkg-parsechangelog -l "$top/packaging/debian/changelog" -S Version)
arch=$(dpkg --print-architecture)
debdir=${1:-}
if [ -z "$debdir" ]; then
	say "building the packages (packaging/build-deb.sh)"
	debdir=$work/debs
	"$top/packaging/build-deb.sh" "$debdir" >"$work/build-deb.log" 2>&1 || {
		tail -n 40 "$work/build-deb.log"; fail "packaging/build-deb.sh"; }
fi
debs=
for p in libsemclient1 semctl semd; do
	f=$debdir/${p}_${version}_$arch.deb
	[ -f "$f" ] || fail "$f is missing (packaging/build-deb.sh $debdir makes it)"
	debs="$debs $f"
done
echo "ok - the packages of semd $version: $(echo "$debs" | sed "s|$debdir/||g")"

# What the image needs: systemd as init, D-Bus, and every dependency of the
# packages (the first of each alternative, without versions).
ours="libsemclient1 semctl semd"
deps=$(for f in $debs; do dpkg-deb -f "$f" Depends; echo; done |
	tr ',' '\n' | sed 's/|.*//; s/(.*//; s/:any//; s/[[:space:]]//g' | sort -u |
	grep -v -x -e '' $(for p in $ours; do printf ' -e %s' "$p"; done) || true)
include=$(echo systemd systemd-sysv dbus $deps | tr ' ' ',')
key=$(printf '%s\n' "$suite" "$arch" "$include" | sha256sum | cut -c1-12)
tarball=$cache/$suite-$arch-$key.tar.gz

# --- the image ---------------------------------------------------------------
# The Debian mirror apt uses here, for the suite (or this host's own one:
# the same archive serves both).
mirror() {
	for rel in "$suite" "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"; do
		[ -n "$rel" ] || continue
		apt-get indextargets --no-release-info --format '$(REPO_URI)' \
			"Release: $rel" 'Created-By: Packages' 2>/dev/null | head -n 1 | grep . && return 0
	done
	return 1
}
if [ -f "$tarball" ]; then
	say "image: $tarball (cached)"
else
	m=${SEMD_NSPAWN_MIRROR:-$(mirror)} || skip "no Debian mirror in apt's sources: set SEMD_NSPAWN_MIRROR"
	# apt's proxy, if it has one, for debootstrap's downloads too.
	if [ -z "${http_proxy:-}" ]; then
		eval "$(apt-config shell http_proxy Acquire::http::Proxy)"
		[ -z "${http_proxy:-}" ] || export http_proxy
	fi
	say "debootstrap --variant=minbase $suite from $m, with $include"
	d0=$(date +%s)
	mkdir -p "$cache"
	if ! debootstrap --variant=minbase --include="$include" "$suite" "$work/boot" "$m" \
			>"$work/debootstrap.log" 2>&1; then
		tail -n 30 "$work/debootstrap.log"
		[ ! -f "$work/boot/debootstrap/debootstrap.log" ] || tail -n 30 "$work/boot/debootstrap/debootstrap.log"
		fail "debootstrap $suite from $m"
	fi
	# The downloaded .debs and package lists are not needed to boot.
	rm -rf "$work/boot/var/cache/apt/archives/"*.deb "$work/boot/var/lib/apt/lists/"*
	tar --numeric-owner -C "$work/boot" -cf - . | gzip -1 >"$tarball.$$"
	mv "$tarball.$$" "$tarball"
	rm -rf --one-file-system "$work/boot"
	echo "ok - debootstrap made the image in $(($(date +%s) - d0)) s: $tarball ($(du -h "$tarball" | cut -f1))"
fi

# --- the container ------------------------------------------------------------
root=$work/root
out=$work/out
mkdir -p "$root" "$out"
tar --numeric-owner -C "$root" -xzf "$tarball" || fail "unpacking $tarball"
mkdir -p "$root/root/debs" "$root/var/log/journal"
# shellcheck disable=SC2086
cp $debs "$root/root/debs/"
cp "$top/packaging/tests/nspawn-inside.sh" "$root/root/nspawn-inside.sh"
cp "$top/tests/tap.sh" "$root/root/tap.sh"
chmod 0755 "$root/root/nspawn-inside.sh"
cat >"$root/etc/systemd/system/semd-nspawn-test.service" <<EOF
[Unit]
Description=semd packaging test (packaging/tests/nspawn.sh)
After=multi-user.target
SuccessAction=poweroff
FailureAction=poweroff

[Service]
Type=oneshot
Environment=OUT=/semd-test DEBS=/root/debs
ExecStart=/root/nspawn-inside.sh
StandardOutput=append:/semd-test/log
StandardError=inherit
TimeoutStartSec=$limit

[Install]
WantedBy=multi-user.target
EOF
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -s ../semd-nspawn-test.service "$root/etc/systemd/system/multi-user.target.wants/"
: >"$out/log"

# A host booted with systemd registers the container with machined in a
# scope of its own; elsewhere (a build container) it runs in ours.
if [ -d /run/systemd/system ]; then reg=; else reg="--register=no --keep-unit"; fi
# Can systemd-nspawn run here at all?
# shellcheck disable=SC2086
if ! timeout 60 systemd-nspawn -q $reg -D "$root" -M "$machine" --private-network \
		/bin/true >"$work/probe.log" 2>&1; then
	sed 's/^/# /' "$work/probe.log"
	skip "systemd-nspawn cannot run a container here"
fi

say "booting $machine (systemd-nspawn --boot), the test runs inside"
b0=$(date +%s)
# shellcheck disable=SC2086
timeout -k 20 "$limit" systemd-nspawn -q $reg -D "$root" -M "$machine" --boot \
	--private-network --bind="$out:/semd-test" --console=pipe \
	>"$work/console.log" 2>&1 </dev/null &
nspawn_pid=$!
tail -n +1 -f --pid="$nspawn_pid" "$out/log" &
tail_pid=$!
rc=0
wait "$nspawn_pid" || rc=$?
nspawn_pid=
sleep 1.2    # tail's last look (it checks --pid every second)
kill "$tail_pid" 2>/dev/null || true
wait "$tail_pid" 2>/dev/null || true
tail_pid=
say "boot, install, test and poweroff: $(($(date +%s) - b0)) s (systemd-nspawn exit $rc)"

if [ "$rc" != 0 ] || [ ! -s "$out/status" ]; then
	echo "--- console ---"; tail -n 40 "$work/console.log"
	echo "--- the container's journal ---"
	journalctl -D "$root/var/log/journal" --no-pager 2>/dev/null | tail -n 60
fi
if [ ! -s "$out/status" ]; then
	[ "$rc" = 124 ] && fail "the test in the container did not end within $limit s"
	fail "the test in the container did not finish (systemd-nspawn exit $rc)"
fi
n=$(cat "$out/status")
[ "$n" = 0 ] || fail "$n checks failed in the container"
echo "ok - semd's packages under systemd in a booted $suite container"
