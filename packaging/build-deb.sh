#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# packaging/build-deb.sh OUTDIR - build semd's Debian packages and check them.
# Copies the git-tracked files of the source tree (as they are in the working
# tree) to a temporary directory, puts packaging/debian at debian/ there, runs
# `dpkg-buildpackage -us -uc -b` (tests skipped: they run in `make check`;
# DEB_BUILD_OPTIONS is passed on, nopgo for a build without profile-guided
# optimization),
# checks that each .deb holds the files it must, runs lintian (errors fail,
# warnings are shown), and copies the .deb files to OUTDIR.
# Set SEMD_DEB_SOURCE=head to package the last commit instead.
set -eu

usage() { echo "usage: $0 OUTDIR" >&2; exit 64; }
[ $# -eq 1 ] || usage
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

for tool in git dpkg-buildpackage dpkg-deb lintian dh systemd-analyze; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "$0: $tool is missing: run scripts/deps.sh" >&2; exit 69; }
done

version=$(dpkg-parsechangelog -l "$top/packaging/debian/changelog" -S Version)
work=$(mktemp -d "${TMPDIR:-/tmp}/semd-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/semd-$version
mkdir -p "$src"

echo "== copying the source tree to $src"
if [ "${SEMD_DEB_SOURCE:-worktree}" = head ]; then
	git -C "$top" archive --format=tar HEAD | tar -x -C "$src"
else
	# Tracked files only (no build trees, no generated files), skipping
	# any deleted from the working tree but not yet committed.
	(cd "$top" && git ls-files -z | xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -) | tar -x -C "$src"
fi
rm -rf "$src/debian"
cp -r "$top/packaging/debian" "$src/debian"

echo "== dpkg-buildpackage -us -uc -b (log: $out/build.log)"
opts="${DEB_BUILD_OPTIONS:-} nocheck parallel=${JOBS:-2}"
if ! (cd "$src" && DEB_BUILD_OPTIONS=$opts \
		dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log" >&2
	echo "$0: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
	exit 1
fi

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
failed=0

# expect PACKAGE PATH...: the package's .deb holds every PATH (globs allowed).
expect() {
	pkg=$1; shift
	deb=$work/${pkg}_${version}_$arch.deb
	if [ ! -f "$deb" ]; then
		echo "not ok - $pkg: $deb was not built"; failed=1; return
	fi
	list=$(dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|')
	for want; do
		found=no
		for got in $list; do
			# shellcheck disable=SC2254
			case $got in $want) found=yes; break;; esac
		done
		if [ $found = yes ]; then echo "ok - $pkg has $want"
		else echo "not ok - $pkg lacks $want"; failed=1; fi
	done
}

echo "== package contents"
expect semd /usr/sbin/semd /usr/bin/semd-benchmark \
	/lib/systemd/system/semd.socket /lib/systemd/system/semd.service \
	/etc/semd/semd.conf /usr/share/man/man8/semd.8.gz /usr/share/man/man5/semd.conf.5.gz \
	/usr/share/man/man1/semd-benchmark.1.gz \
	/usr/share/semd/prometheus/semd-rules.yml /usr/share/semd/grafana/semd-dashboard.json
expect semctl /usr/bin/semctl /usr/share/man/man1/semctl.1.gz \
	/usr/share/bash-completion/completions/semctl /usr/share/zsh/vendor-completions/_semctl
expect libsemclient1 "/usr/lib/$ma/libsemclient.so.1" "/usr/lib/$ma/libsemclient.so.1.*"
expect libsemclient-dev /usr/include/semclient.h "/usr/lib/$ma/libsemclient.so" \
	"/usr/lib/$ma/libsemclient.a" "/usr/lib/$ma/pkgconfig/semclient.pc" \
	/usr/share/man/man3/semclient.3.gz
expect python3-semclient /usr/lib/python3/dist-packages/semclient/__init__.py \
	"/usr/lib/python3/dist-packages/semclient/_semclient.cpython-*.so" \
	/usr/lib/python3/dist-packages/semclient/py.typed \
	/usr/lib/python3/dist-packages/semclient/_semclient.pyi \
	"/usr/share/doc/python3-semclient/python.md*" \
	/usr/share/doc/python3-semclient/examples/jobs.py

# The maintainer scripts: the system user, and the units enabled.
ctl=$work/ctl
dpkg-deb -e "$work/semd_${version}_$arch.deb" "$ctl" 2>/dev/null || true
if grep -q 'adduser --quiet --system --group' "$ctl/postinst" 2>/dev/null &&
   grep -q 'deb-systemd-helper.*enable.*semd.socket' "$ctl/postinst"; then
	echo "ok - semd's postinst creates the user and enables semd.socket"
else
	echo "not ok - semd's postinst does not create the user and enable semd.socket"; failed=1
fi

# Profile-guided optimization (debian/rules), unless DEB_BUILD_OPTIONS has
# nopgo: the training ran, and the last build used its profile.
case " $opts " in
*" nopgo "*) echo "ok - built without profile-guided optimization (nopgo)";;
*)	after=$(sed -n '/^pgo: 3\. the build with the profile/,$p' "$out/build.log")
	if printf '%s\n' "$after" | grep -q -- '-fprofile-use.* -c -o daemon/semd-conn\.o' &&
	   ! printf '%s\n' "$after" | grep -q -- '-fprofile-generate'; then
		echo "ok - semd is built with profile-guided optimization"
	else
		echo "not ok - the profile-guided build did not run as debian/rules says"; failed=1
	fi;;
esac

echo "== the packaged programs"
x=$work/root
for p in semd semctl libsemclient1 python3-semclient; do dpkg-deb -x "$work/${p}_${version}_$arch.deb" "$x"; done
res=$(LD_LIBRARY_PATH=$x/usr/lib/$ma "$x/usr/sbin/semd" --config "$x/etc/semd/semd.conf" --check-config 2>&1) || true
if [ "$res" = "semd: configuration OK" ]; then echo "ok - the packaged semd accepts the packaged semd.conf"
else echo "not ok - the packaged semd on the packaged semd.conf: $res"; failed=1; fi
if LD_LIBRARY_PATH=$x/usr/lib/$ma "$x/usr/bin/semctl" --version >/dev/null 2>&1; then
	echo "ok - the packaged semctl runs on the packaged libsemclient1"
else echo "not ok - the packaged semctl does not run"; failed=1; fi
# The packaged Python package, on the packaged library, against the packaged
# daemon: one permit taken and given back (bounded: a 10 s timeout each).
sock=$work/py.sock
LD_LIBRARY_PATH=$x/usr/lib/$ma timeout 30 "$x/usr/sbin/semd" --listen "unix:$sock" \
	--ready-file "$work/py.ready" --acl "anonymous * all" >"$work/py-semd.log" 2>&1 &
semd_pid=$!
i=0
while [ ! -s "$work/py.ready" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
res=$(LD_LIBRARY_PATH=$x/usr/lib/$ma PYTHONPATH=$x/usr/lib/python3/dist-packages \
	PYTHONDONTWRITEBYTECODE=1 timeout 20 /usr/bin/python3 -c '
import sys, semclient
with semclient.Client(sys.argv[1], timeout=10) as c:
    with c.semaphore("deb", limit=1).acquire(timeout=10) as p:
        print("ok", p.n, semclient.library_version())
' "unix:$sock" 2>&1) || true
kill "$semd_pid" 2>/dev/null; wait "$semd_pid" 2>/dev/null || true
case $res in
"ok 1 "*) echo "ok - the packaged semclient takes a permit of the packaged semd";;
*) echo "not ok - the packaged semclient: $res"; failed=1;;
esac
# The packaged units, pointed at the packaged files, verify cleanly.
mkdir -p "$work/units"
for u in semd.socket semd.service; do
	sed "s|/usr/sbin/semd|$x/usr/sbin/semd|g; s|/etc/semd/semd.conf|$x/etc/semd/semd.conf|g" \
		"$x/lib/systemd/system/$u" >"$work/units/$u"
done
res=$(cd "$work/units" && systemd-analyze verify --man=no ./semd.socket ./semd.service 2>&1) || res="$res (failed)"
if [ -z "$res" ]; then echo "ok - systemd-analyze verify finds nothing in the packaged units"
else echo "not ok - systemd-analyze verify: $res"; failed=1; fi

echo "== lintian"
changes=$work/semd_${version}_$arch.changes
if lintian --fail-on error --display-info "$changes" >"$work/lintian.log" 2>&1; then
	echo "ok - lintian finds no errors"
else
	echo "not ok - lintian finds errors"; failed=1
fi
sed 's/^/  /' "$work/lintian.log"

cp "$work"/*.deb "$out"/
echo "== packages in $out:"
(cd "$out" && ls -1 ./*.deb)
[ $failed = 0 ] || { echo "$0: some checks failed" >&2; exit 1; }
echo "all checks passed"
