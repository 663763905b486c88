#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# scripts/deps.sh [build|check|all]: install the packages semd needs on
# Debian 12, Debian 13 or Ubuntu 24.04 (the release read from /etc/os-release):
#   build  to build it (scripts/demo.sh)
#   check  to build it and run the whole of `make check` (tests/run trixie)
#   all    for every stage of tests/run (the default)
# libraft 0.22 is needed: Debian 12 has it in Debian's bookworm-backports
# suite, which is added (from the mirror the system's sources name) when the
# system has no such line. Runs apt-get as root (or through sudo when not root).
set -e
set_=${1:-all}
case $set_ in build|check|all) ;; *) echo "usage: $0 [build|check|all]" >&2; exit 64 ;; esac
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
RAFT_MIN=0.22

build="build-essential autoconf automake libtool pkg-config \
libevent-dev libprotobuf-c-dev protobuf-c-compiler libssl-dev libsystemd-dev \
libraft-dev libuv1-dev libjansson-dev"
# What make check runs beside the build: openssl (test certificates),
# systemd (socket activation, systemd-analyze), iproute2 (ss), the python3
# helpers, zsh (completion), prometheus (promtool, the rules and a scrape),
# groff-base and man-db (the manual pages), faketime (a clock step).
check="$build python3 openssl systemd iproute2 procps zsh prometheus groff-base man-db faketime \
curl python3-jsonschema"
# The other stages: clang with the sanitizers' runtime of the system's
# default clang (libclang-rt-dev follows it), the cross build, lint, the
# Debian packages, Go, Python, the Debian 13 chroot (debootstrap and, on
# Ubuntu, Debian's archive key).
all="$check clang libclang-rt-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user \
valgrind cppcheck clang-tidy bear redis-server \
debhelper devscripts lintian fakeroot golang-go \
python3-dev python3-all-dev python3-setuptools python3-pytest python3-redis dh-python \
pyflakes3 mypy debootstrap debian-archive-keyring chromium"
case $set_ in build) pkgs=$build ;; check) pkgs=$check ;; *) pkgs=$all ;; esac
# Node and npm for the TypeScript package and the console's browser test:
# Debian's nodejs (18 in Debian 12) and npm, unless a node with its own npm
# is there already (a nodejs package that bundles npm conflicts with npm).
if [ "$set_" = all ]; then
	command -v node >/dev/null && command -v npm >/dev/null || pkgs="$pkgs nodejs npm"
fi

ID='' VERSION_CODENAME=''
# shellcheck disable=SC1091
[ -r /etc/os-release ] && . /etc/os-release
raft=libraft-dev
if [ "$ID" = debian ] && [ "$VERSION_CODENAME" = bookworm ]; then
	raft=libraft-dev/bookworm-backports
fi

# installed PKG [MIN]: PKG is installed (at version MIN or later).
installed() {
	v=$(dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null) || return 1
	case $v in "install ok installed "*) ;; *) return 1 ;; esac
	[ -z "$2" ] || dpkg --compare-versions "${v##* }" ge "$2"
}

# add_backports: a bookworm-backports line on the mirror (and key) of the
# system's own bookworm line, unless the system has one already.
add_backports() {
	grep -Eqs '(^|[[:space:]])bookworm-backports([[:space:]]|$)' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources && return 0
	uri='' key=''
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		# deb822: the first stanza of Types deb whose Suites has bookworm.
		line=$(awk 'BEGIN { RS = ""; FS = "\n" }
			{ t = s = u = k = ""
			  for (i = 1; i <= NF; i++) {
				if ($i ~ /^Types:/) t = $i; else if ($i ~ /^Suites:/) s = $i
				else if ($i ~ /^URIs:/) { split($i, a, " "); u = a[2] }
				else if ($i ~ /^Signed-By:/) { split($i, a, " "); k = a[2] } }
			  if (t ~ /[[:space:]]deb([[:space:]]|$)/ && s ~ /[[:space:]]bookworm([[:space:]]|$)/ && u != "") {
				print u, k; exit } }' "$f")
		uri=${line%% *} key=${line#* }
		[ -z "$uri" ] || break
	done
	if [ -z "$uri" ]; then
		# one line a source: deb [options] URI bookworm COMPONENTS
		uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\)[[:space:]]\+bookworm[[:space:]].*/\2/p' | head -n 1)
	fi
	[ -n "$uri" ] || uri=http://deb.debian.org/debian
	[ -n "$key" ] || [ ! -f /usr/share/keyrings/debian-archive-keyring.gpg ] ||
		key=/usr/share/keyrings/debian-archive-keyring.gpg
	echo "deps.sh: adding Debian's bookworm-backports suite ($uri) for libraft-dev $RAFT_MIN"
	{
		echo "Types: deb"
		echo "URIs: $uri"
		echo "Suites: bookworm-backports"
		echo "Components: main"
		[ -z "$key" ] || echo "Signed-By: $key"
	} | $SUDO tee /etc/apt/sources.list.d/debian-backports.sources >/dev/null
}

missing=
for p in $pkgs; do
	case $p in
	libraft-dev) installed "$p" "$RAFT_MIN" || missing="$missing $raft" ;;
	*) installed "$p" || missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0
case $missing in *bookworm-backports*) add_backports ;; esac
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
unknown=
for p in $missing; do
	apt-cache show --no-all-versions "${p%/*}" >/dev/null 2>&1 || unknown="$unknown ${p%/*}"
done
if [ -n "$unknown" ]; then
	echo "deps.sh: not in this system's package sources:$unknown" >&2
	[ "$ID" != ubuntu ] || echo "deps.sh: on Ubuntu they are in universe: add-apt-repository universe" >&2
	exit 69
fi
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
