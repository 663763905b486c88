# SPDX-License-Identifier: BSD-2-Clause
# go/: the Go package semclient (cgo over libsemclient), built and tested
# by tests/go.sh (tests/run's go stage) with Debian's golang-go, offline.
EXTRA_DIST += go/semclient/go.mod go/semclient/shim.c go/semclient/shim.h \
	go/semclient/doc.go go/semclient/errors.go go/semclient/client.go \
	go/semclient/table.go go/semclient/callbacks.go go/semclient/semaphore.go \
	go/semclient/info.go go/semclient/watch.go go/semclient/locker.go \
	go/semclient/cluster.go go/semclient/heap.go go/semclient/queue.go \
	go/semclient/export_test.go go/semclient/queue_test.go \
	go/semclient/daemon_test.go go/semclient/semclient_test.go \
	go/semclient/durable_test.go go/semclient/example_test.go \
	go/semclient/bench_test.go go/semclient/names.go \
	go/semclient/promises_test.go tests/go.sh doc/go.md
