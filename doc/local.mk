# SPDX-License-Identifier: BSD-2-Clause
# doc/ build fragment, included by the top Makefile.am: the manual pages.
dist_man_MANS += doc/semd.8 doc/semd.conf.5 doc/semd-benchmark.1
