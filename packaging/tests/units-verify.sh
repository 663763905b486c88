#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# packaging/tests/units-verify.sh - `systemd-analyze verify` finds nothing
# wrong in semd.socket and semd.service. verify needs ExecStart's binary to
# exist, so it checks a copy of the units whose commands run the semd just
# built; the man pages they cite are looked up in doc/.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "SKIP: systemd-analyze is not installed (scripts/deps.sh installs systemd)"
	exit 77
fi

mkdir -p "$T/units" "$T/man/man1" "$T/man/man5" "$T/man/man8"
for u in semd.socket semd.service; do
	sed "s|/usr/sbin/semd|$top_builddir/semd|g" "$top_srcdir/packaging/systemd/$u" >"$T/units/$u"
done
ok "the copy runs the built semd" grep -q "^ExecStart=$top_builddir/semd " "$T/units/semd.service"

# Documentation= names man pages: verify runs man(1) on each, so give it ours.
man_opt=--man=yes
for p in semd.8 semd.conf.5 semctl.1; do
	sec=${p##*.}
	if [ -f "$top_srcdir/doc/$p" ]; then
		cp "$top_srcdir/doc/$p" "$T/man/man$sec/$p"
	else
		echo "# doc/$p is not written yet: not checking Documentation= links"
		man_opt=--man=no
	fi
done

cd "$T/units" || exit 1
out=$(MANPATH="$T/man" systemd-analyze verify "$man_opt" ./semd.socket ./semd.service 2>&1)
rc=$?
[ -z "$out" ] || printf '%s\n' "$out"
expect_eq "systemd-analyze verify exit status" 0 "$rc"
expect_eq "systemd-analyze verify prints nothing" "" "$out"

# The hardening the issue asks for is really there (a unit that lost a line
# would still verify).
for want in Type=notify WatchdogSec=30s User=semd RuntimeDirectory=semd \
    NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
    PrivateDevices=yes ProtectKernelTunables=yes ProtectKernelModules=yes \
    ProtectKernelLogs=yes ProtectControlGroups=yes \
    'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6' RestrictNamespaces=yes \
    LockPersonality=yes MemoryDenyWriteExecute=yes RestrictRealtime=yes \
    SystemCallFilter=@system-service SystemCallArchitectures=native \
    CapabilityBoundingSet= LimitNOFILE=65536 'ExecReload=/bin/kill -HUP $MAINPID' \
    NonBlocking=yes StateDirectory=semd StateDirectoryMode=0700; do
	ok "semd.service has $want" grep -qxF "$want" semd.service
done
for want in ListenStream=/run/semd/semd.sock DirectoryMode=0755 \
    SocketMode=0666 SocketUser=semd SocketGroup=semd FileDescriptorName=semd; do
	ok "semd.socket has $want" grep -qxF "$want" semd.socket
done
# Issue 12: no TCP port by default (it made every local user anonymous).
ok "semd.socket has no TCP port" sh -c "! grep -q '^ListenStream=[0-9\[]' semd.socket"
ok "semd.service keeps /run/semd reachable (0755)" grep -qxF RuntimeDirectoryMode=0755 semd.service

# systemd's own reading of the sandbox: `security` scores the service from 0
# (locked down) to 10; a well hardened network daemon stays under 3.
score=$(systemd-analyze security --offline=yes --no-pager ./semd.service 2>/dev/null |
	sed -n 's/.*Overall exposure level for semd.service: \([0-9.]*\).*/\1/p')
if [ -n "$score" ]; then
	ok "exposure level $score is below 3.0" awk -v s="$score" 'BEGIN { exit !(s < 3.0) }'
else
	echo "# this systemd-analyze cannot score a unit offline"
fi
t_done
