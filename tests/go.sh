#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/go.sh BUILDDIR [go test args...]: vet, format-check and test the Go
# package go/semclient (go test -race) against BUILDDIR's libsemclient and
# semd, offline: the standard library only, no module download, no
# toolchain switch. The tests start their own daemons (UNIX sockets in a
# temporary directory, TCP on 127.0.0.1). Needs Debian's golang-go.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: tests/go.sh BUILDDIR [go test args]}" && pwd)
shift
command -v go >/dev/null || { echo "tests/go.sh: no go (apt-get install golang-go)" >&2; exit 1; }
export PKG_CONFIG_PATH="$build/client${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export SEMD="$build/semd"
export GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-buildvcs=false GO111MODULE=on
export GOCACHE="${GOCACHE:-$build/go/cache}" GOPATH="${GOPATH:-$build/go/path}"
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wall -Werror}"
cd "$top/go/semclient"
bad=$(gofmt -l .)
[ -z "$bad" ] || { echo "gofmt: not formatted: $bad" >&2; exit 1; }
go vet ./...
go test -race -count=1 -timeout 300s "$@" ./...
