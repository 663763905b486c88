# SPDX-License-Identifier: BSD-2-Clause
# tests/http.mk: build fragment, included by the top Makefile.am
#
# semd over HTTP/JSON (daemon/http/, doc/http.md): every resource through
# curl and Python's http.client, against the OpenAPI document; hostile
# input and clients; the permit invariants under many clients dropping
# mid-poll; a cluster whose leader dies under a long-poll.
HTTP_SH_TESTS = tests/http/resources.sh tests/http/hostile.sh \
	tests/http/invariants.sh tests/http/cluster.sh
TESTS += $(HTTP_SH_TESTS)
EXTRA_DIST += $(HTTP_SH_TESTS) tests/http/lib.sh tests/http/hclient.py \
	tests/http/resources.py tests/http/openapi-check.py \
	tests/http/hostile.py tests/http/invariants.py tests/http/cluster.py
