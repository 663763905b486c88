#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Generate ./configure from configure.ac (needs autoconf, automake, libtool, pkg-config).
set -e
cd "$(dirname "$0")"
mkdir -p m4
autoreconf -fi
