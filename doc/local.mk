# SPDX-License-Identifier: BSD-2-Clause
# doc/ build fragment, included by the top Makefile.am: the manual pages.
dist_man_MANS += doc/semd.8 doc/semd.conf.5 doc/semd-benchmark.1
# The pages README.md links to (doc/go.md is go/local.mk's).
EXTRA_DIST += doc/design.md doc/running.md doc/testing.md doc/durable.md \
	doc/cluster.md doc/semctl.md doc/api.md doc/features.md doc/protocol.md \
	doc/benchmarks.md doc/http.md
