# SPDX-License-Identifier: BSD-2-Clause
# daemon/http/ build fragment, included by the top Makefile.am after
# daemon/local.mk: semd over HTTP/JSON (doc/http.md), part of semd.
#
# HTTP/1.1 is read and written here (http_parse.c, http_conn.c) on the
# connection layer's loops; jansson reads and writes the JSON. openapi.json, the contract, is built into the daemon (served at
# /v1/openapi.json) as a C array made here.
semd_SOURCES += daemon/http/http.h daemon/http/http-int.h \
	daemon/http/http_config.c daemon/http/http_config.h \
	daemon/http/http_front.c daemon/http/http_conn.c daemon/http/http_gate.c \
	daemon/http/http_routes.c daemon/http/http_acquire.c \
	daemon/http/http_watch.c
nodist_semd_SOURCES = daemon/http/http_openapi.c
semd_CFLAGS += $(JANSSON_CFLAGS)
semd_LDADD += daemon/http/libsemhttp.a $(JANSSON_LIBS)

# libsemhttp.a: the JSON mapping and the request reader, pure (no I/O):
# semd and the fuzzers link it.
noinst_LIBRARIES += daemon/http/libsemhttp.a
daemon_http_libsemhttp_a_SOURCES = daemon/http/http_json.c daemon/http/http_json.h \
	daemon/http/http_parse.c daemon/http/http_parse.h
daemon_http_libsemhttp_a_CFLAGS = $(AM_CFLAGS) $(LTO_CFLAGS) $(JANSSON_CFLAGS) $(PROTOBUF_C_CFLAGS) -fPIC

daemon/http/http_openapi.c: $(top_srcdir)/daemon/http/openapi.json
	$(AM_V_GEN)$(MKDIR_P) daemon/http && { \
	  echo '/* Made from daemon/http/openapi.json by daemon/http/local.mk. */'; \
	  echo '#include <stddef.h>'; \
	  echo 'extern const unsigned char http_openapi_json[];'; \
	  echo 'extern const size_t http_openapi_json_len;'; \
	  echo 'const unsigned char http_openapi_json[] = {'; \
	  od -An -v -tx1 $(top_srcdir)/daemon/http/openapi.json | \
	    sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0 };'; \
	  echo 'const size_t http_openapi_json_len = sizeof http_openapi_json - 1;'; \
	} > $@-t && mv $@-t $@
BUILT_SOURCES += daemon/http/http_openapi.c
CLEANFILES += daemon/http/http_openapi.c
EXTRA_DIST += daemon/http/openapi.json
