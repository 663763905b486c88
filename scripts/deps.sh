#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Install the Debian 12 packages semd needs to build, test and package.
# Runs apt-get as root (or through sudo when not root).
set -e
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
pkgs="build-essential autoconf automake libtool pkg-config \
libevent-dev libprotobuf-c-dev protobuf-c-compiler libssl-dev libsystemd-dev \
libraft-dev libuv1-dev \
clang libclang-rt-14-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user \
systemd openssl python3 faketime valgrind cppcheck clang-tidy bear redis-server \
debhelper devscripts lintian fakeroot golang-go prometheus \
python3-dev python3-all-dev python3-setuptools python3-pytest python3-redis dh-python \
pyflakes3 zsh"
# Node and npm for the TypeScript package (tests/js.sh): Debian's nodejs
# (18 in Debian 12) and npm, unless a node with its own npm is there
# already (a nodejs package that bundles npm conflicts with Debian's npm).
command -v node >/dev/null && command -v npm >/dev/null || pkgs="$pkgs nodejs npm"
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
