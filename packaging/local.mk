# SPDX-License-Identifier: BSD-2-Clause
# packaging/ build fragment, included by the top Makefile.am:
# systemd units, the example configuration, the Debian packaging and their tests.

systemdunit_DATA = packaging/systemd/semd.socket packaging/systemd/semd.service
systemdunitdir = $(systemdsystemunitdir)

semdconfdir = $(sysconfdir)/semd
semdconf_DATA = packaging/semd.conf

# Monitoring: the Prometheus alerting rules and the Grafana dashboard, in
# $(datadir)/semd (semd(8), MONITORING).
semdpromdir = $(pkgdatadir)/prometheus
dist_semdprom_DATA = packaging/prometheus/semd-rules.yml
semdgrafanadir = $(pkgdatadir)/grafana
dist_semdgrafana_DATA = packaging/grafana/semd-dashboard.json

# The example is installed as the real configuration: every key commented out
# with its default, so an untouched file changes nothing.
packaging/semd.conf: packaging/semd.conf.example
	$(AM_V_GEN)$(MKDIR_P) packaging && cp $(srcdir)/packaging/semd.conf.example $@
CLEANFILES += packaging/semd.conf

# distcheck installs as an ordinary user under its own prefix: keep the units
# there too, not in the system's unit directory that systemd.pc names.
AM_DISTCHECK_CONFIGURE_FLAGS = --with-systemdsystemunitdir=$$dc_install_base/lib/systemd/system

EXTRA_DIST += \
	packaging/semd.conf.example \
	packaging/systemd/semd.socket \
	packaging/systemd/semd.service \
	packaging/build-deb.sh \
	packaging/debian/changelog \
	packaging/debian/control \
	packaging/debian/copyright \
	packaging/debian/rules \
	packaging/debian/source/format \
	packaging/debian/semd.install \
	packaging/debian/semd.postinst \
	packaging/debian/semd.postrm \
	packaging/debian/semctl.install \
	packaging/debian/libsemclient1.install \
	packaging/debian/libsemclient1.symbols \
	packaging/debian/libsemclient-dev.install \
	packaging/debian/not-installed \
	packaging/debian/python3-semclient.docs \
	packaging/debian/python3-semclient.examples \
	packaging/tests/units-verify.sh \
	packaging/tests/install.sh \
	packaging/tests/nspawn.sh \
	packaging/tests/nspawn-inside.sh \
	packaging/tests/man-lint.sh \
	packaging/tests/docs-match.sh \
	packaging/tests/socket-activate.sh \
	packaging/tests/prometheus-rules.sh \
	packaging/tests/semd-rules.test.yml

TESTS += packaging/tests/units-verify.sh packaging/tests/install.sh \
	packaging/tests/man-lint.sh packaging/tests/docs-match.sh \
	packaging/tests/socket-activate.sh packaging/tests/prometheus-rules.sh

# Print the installation directories, fully expanded, for packaging/tests/install.sh.
packaging-print-dirs:
	@echo "VERSION=$(VERSION)"; \
	echo "prefix=$(prefix)"; \
	echo "bindir=$(bindir)"; \
	echo "sbindir=$(sbindir)"; \
	echo "libdir=$(libdir)"; \
	echo "includedir=$(includedir)"; \
	echo "datadir=$(datadir)"; \
	echo "pkgconfigdir=$(pkgconfigdir)"; \
	echo "mandir=$(mandir)"; \
	echo "sysconfdir=$(sysconfdir)"; \
	echo "systemdunitdir=$(systemdunitdir)"
.PHONY: packaging-print-dirs
