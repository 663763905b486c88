# SPDX-License-Identifier: BSD-2-Clause
# console/ build fragment, included by the top Makefile.am: the web console
# (doc/console.md), plain HTML, CSS and ES modules with no build step of
# their own, built into semd as a table of files (console/embed.sh) that
# daemon/http/http_ui.c serves under /ui/.
CONSOLE_FILES = console/index.html console/console.css console/icon.svg \
	console/js/app.js console/js/api.js console/js/dom.js console/js/live.js \
	console/js/ui.js console/js/chart.js console/js/list.js console/js/name.js \
	console/js/holds.js console/js/sessions.js console/js/cluster.js console/js/signin.js
EXTRA_DIST += $(CONSOLE_FILES) console/embed.sh console/local.mk \
	tests/console/run.sh tests/console/console.mjs tests/console/package.json \
	tests/console/package-lock.json tests/console/.npmrc \
	doc/console.md doc/console-list.png doc/console-name.png \
	doc/console-holds.png doc/console-zoom.png doc/console-cluster.png

# The table is a library of its own, so that semd's own lists of sources
# stay the HTTP front door's (daemon/http/local.mk).
semd_SOURCES += daemon/http/http_ui.c daemon/http/http_ui.h
noinst_LIBRARIES += console/libsemui.a
nodist_console_libsemui_a_SOURCES = console/ui_files.c
console_libsemui_a_CFLAGS = $(AM_CFLAGS) $(LTO_CFLAGS)
semd_LDADD += console/libsemui.a
console/ui_files.c: $(CONSOLE_FILES) console/embed.sh
	$(AM_V_GEN)$(MKDIR_P) console && \
	$(SHELL) $(srcdir)/console/embed.sh $(srcdir)/console $@ \
		$(CONSOLE_FILES:console/%=%)
CLEANFILES += console/ui_files.c
