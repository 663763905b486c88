# SPDX-License-Identifier: BSD-2-Clause
# js/: the TypeScript package semclient (over semd's HTTP front door) and
# its runnable examples, built and tested by tests/js.sh (tests/run's js
# stage) with node and npm; nothing here is part of make or make check.
EXTRA_DIST += js/local.mk js/package.json js/package-lock.json js/.npmrc js/.gitignore \
	js/tsconfig.json js/README.md js/src/index.ts js/src/client.ts js/src/errors.ts \
	js/src/permit.ts js/src/sse.ts js/src/transport.ts js/src/types.ts js/src/watch.ts \
	js/test/tsconfig.json js/test/daemon.ts js/test/sse.test.ts js/test/memory.test.ts \
	js/test/lost.test.ts js/test/durable.test.ts js/test/cluster.test.ts \
	js/runtimes/package.json js/runtimes/package-lock.json js/runtimes/.npmrc \
	js/runtimes/.gitignore js/runtimes/smoke.mjs \
	examples/node/package.json examples/node/package-lock.json examples/node/.npmrc \
	examples/node/.gitignore examples/node/tsconfig.json examples/node/rate-route.ts \
	examples/node/worker.ts tests/js.sh doc/typescript.md
# bench/js-bench.sh: Node over HTTP against ioredis and Redis' Lua.
EXTRA_DIST += bench/js-bench.sh bench/js/package.json bench/js/package-lock.json \
	bench/js/.npmrc bench/js/.gitignore bench/js/bench.mjs
