# tests/core.mk: build fragment, included by the top Makefile.am
