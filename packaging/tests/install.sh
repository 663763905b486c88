#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# packaging/tests/install.sh - `make install DESTDIR=...` puts every piece in
# its usual place: programs, the client library (shared, with its SONAME
# link), header, pkg-config file, man pages, systemd units, the example
# configuration, the Prometheus rules and the Grafana dashboard; and `make
# uninstall` takes them all away again.
. "$top_srcdir/tests/lib.sh"
t_watchdog 300

# A make started by a test must not inherit the outer make's job server.
unset MAKEFLAGS MFLAGS MAKELEVEL
MAKE=${MAKE:-make}
D=$T/root

dirs=$($MAKE -s -C "$top_builddir" packaging-print-dirs) || { echo "cannot read the installation directories"; exit 1; }
eval "$dirs"

ok "make install DESTDIR=... succeeds" sh -c '$0 -s -C "$1" install DESTDIR="$2" >"$3/install.out" 2>&1' \
	"$MAKE" "$top_builddir" "$D" "$T"

# has DESC PATH: the installed tree has PATH (a file, or a link to one).
has() {
	ok "$1: $2" test -e "$D$2"
}
# has_exec DESC PATH: ... and it can be run.
has_exec() {
	ok "$1: $2" test -x "$D$2"
}

has_exec "daemon" "$sbindir/semd"
has "semd(8)" "$mandir/man8/semd.8"
has_exec "benchmark" "$bindir/semd-benchmark"
has "semd-benchmark(1)" "$mandir/man1/semd-benchmark.1"
has_exec "client" "$bindir/semctl"
has "semctl(1)" "$mandir/man1/semctl.1"
has "semctl's bash completion" "$datadir/bash-completion/completions/semctl"
has "semctl's zsh completion" "$datadir/zsh/vendor-completions/_semctl"
has "semclient(3)" "$mandir/man3/semclient.3"
has "Prometheus alerting rules" "$datadir/semd/prometheus/semd-rules.yml"
has "Grafana dashboard" "$datadir/semd/grafana/semd-dashboard.json"

has "shared library link" "$libdir/libsemclient.so"
soname=$(objdump -p "$D$libdir/libsemclient.so" 2>/dev/null | sed -n 's/^ *SONAME *//p')
expect_eq "libsemclient's SONAME" "libsemclient.so.1" "$soname"
has "shared library" "$libdir/libsemclient.so.1"
has "static library" "$libdir/libsemclient.a"
has "header" "$includedir/semclient.h"
has "pkg-config file" "$pkgconfigdir/semclient.pc"
pc() { PKG_CONFIG_LIBDIR=$D$pkgconfigdir pkg-config "$@" semclient; }
expect_eq "semclient.pc's libdir" "$libdir" "$(pc --variable=libdir)"
expect_eq "semclient.pc's includedir" "$includedir" "$(pc --variable=includedir)"
ok "semclient.pc links -lsemclient" sh -c 'case " $0 " in *" -lsemclient "*) exit 0;; esac; exit 1' "$(pc --libs)"

# The installed pieces work together: the programs run against the
# installed library, and a program builds from the installed header and
# semclient.pc alone.
export LD_LIBRARY_PATH="$D$libdir"
expect_eq "installed semd runs" "semd $VERSION" "$("$D$sbindir/semd" --version 2>&1)"
ok "installed semctl runs on the installed library" sh -c '"$0" --version >/dev/null' "$D$bindir/semctl"
cat >"$T/use.c" <<'C'
#include <semclient.h>
#include <stdio.h>
int main(void)
{
	printf("%s\n", semc_version());
	return 0;
}
C
cflags=$(PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_LIBDIR=$D$pkgconfigdir pkg-config --cflags semclient)
libs=$(PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_LIBDIR=$D$pkgconfigdir pkg-config --libs semclient)
# shellcheck disable=SC2086
ok "a program builds with semclient.pc's flags" ${CC:-cc} ${SAN_CFLAGS:-} -o "$T/use" "$T/use.c" $cflags -L"$D$libdir" $libs
ok "... and runs on the installed library" test "$("$T/use")" != ""
unset LD_LIBRARY_PATH

has "semd.conf(5)" "$mandir/man5/semd.conf.5"
has "socket unit" "$systemdunitdir/semd.socket"
has "service unit" "$systemdunitdir/semd.service"
has "configuration" "$sysconfdir/semd/semd.conf"
ok "installed configuration is the example" cmp -s "$top_srcdir/packaging/semd.conf.example" "$D$sysconfdir/semd/semd.conf"

ok "make uninstall DESTDIR=... succeeds" sh -c '$0 -s -C "$1" uninstall DESTDIR="$2" >>"$3/install.out" 2>&1' \
	"$MAKE" "$top_builddir" "$D" "$T"
left=$( [ -d "$D" ] && find "$D" -type f -o -type l)
expect_eq "nothing left after uninstall" "" "$left"

if [ "$t_failed" != 0 ]; then echo "---- make install/uninstall ----"; cat "$T/install.out"; fi
t_done
