# SPDX-License-Identifier: BSD-2-Clause
# python/: the Python package semclient, a C extension over libsemclient
# and a thin pure-Python layer (doc/python.md). Not part of the default
# build: `make python` builds it into python/ of the build tree against
# this tree's library, `make check-python` runs its tests against this
# tree's semd (tests/python.sh); configure --enable-python adds them to
# `make` and `make check`. Installed by `pip install --no-build-isolation
# ./python` (against an installed libsemclient) or the Debian package
# python3-semclient.
EXTRA_DIST += python/pyproject.toml python/setup.py python/README.md python/local.mk \
	python/src/_semclient.c python/src/values.c python/src/ctx.c python/src/ops.c \
	python/src/pysc.h python/semclient/__init__.py python/semclient/_errors.py \
	python/semclient/_types.py python/semclient/_common.py python/semclient/_client.py \
	python/semclient/_aio.py python/semclient/_semclient.pyi python/semclient/py.typed \
	python/tests/conftest.py python/tests/test_sync.py python/tests/test_errors.py \
	python/tests/test_threads.py python/tests/test_async.py python/tests/test_lost.py \
	python/tests/test_durable.py python/tests/test_leaks.py python/tests/test_example.py \
	python/tests/test_exit.py python/tests/test_policy.py python/tests/test_promises.py \
	tests/python.sh examples/jobs.py doc/python.md bench/python-bench.py

python: client/libsemclient.la
	SEMD_PY_BUILD_ONLY=1 PYTHON='$(PYTHON)' $(SHELL) $(top_srcdir)/tests/python.sh $(abs_top_builddir)
check-python: client/libsemclient.la semd$(EXEEXT) semctl$(EXEEXT)
	PYTHON='$(PYTHON)' $(SHELL) $(top_srcdir)/tests/python.sh $(abs_top_builddir)
clean-python:
	rm -rf python/lib python/tmp
.PHONY: python check-python clean-python

if ENABLE_PYTHON
all-local: python
check-local: check-python
clean-local: clean-python
endif
