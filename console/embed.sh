#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Make the C table of the console's files that semd serves under /ui/
# (daemon/http/http_ui.c): each file's bytes, its type and its ETag (the
# first 16 hex digits of its SHA-256), sorted by path for a binary search.
# Usage: console/embed.sh SRCDIR OUT.c PATH...   (PATHs relative to SRCDIR)
set -eu
src=$1 out=$2
shift 2
tmp=$out.tmp
{
	echo "/* Made by console/embed.sh from console/: do not edit. */"
	echo '#include <stddef.h>'
	echo '#include "daemon/http/http_ui.h"'
	i=0
	for p in $(printf '%s\n' "$@" | LC_ALL=C sort); do
		printf 'static const unsigned char ui_f%d[] = {\n' "$i"
		od -An -v -tx1 "$src/$p" | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'
		echo '0x00 };'
		i=$((i + 1))
	done
	echo 'const struct http_ui_file http_ui_files[] = {'
	i=0
	for p in $(printf '%s\n' "$@" | LC_ALL=C sort); do
		case $p in
		*.html) type='text/html; charset=utf-8' ;;
		*.css) type='text/css; charset=utf-8' ;;
		*.js) type='text/javascript; charset=utf-8' ;;
		*.svg) type='image/svg+xml' ;;
		*.png) type='image/png' ;;
		*.json) type='application/json' ;;
		*) type='text/plain; charset=utf-8' ;;
		esac
		size=$(wc -c <"$src/$p")
		sum=$(sha256sum "$src/$p" | cut -c1-16)
		printf '\t{ "%s", "%s", ui_f%d, %d, "\\"%s\\"" },\n' \
		    "$p" "$type" "$i" "$size" "$sum"
		i=$((i + 1))
	done
	echo '};'
	echo "const size_t http_ui_nfiles = $i;"
} >"$tmp"
mv "$tmp" "$out"
