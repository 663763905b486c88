# SPDX-License-Identifier: BSD-2-Clause
"""Build of the semclient package: its C extension links libsemclient.

The extension is compiled against the one libsemclient of the project, the
library semctl and the Go package use, never a copy of its sources. Where
that library comes from, in this order:

1. ``SEMCLIENT_BUILD_DIR``: a configured and built source tree (``make``
   there). The header comes from the sources next to this directory, the
   library from ``BUILD/client/.libs``, and the extension gets a run path
   to it unless ``SEMCLIENT_RPATH=0`` (the Debian build, which links the
   tree's library but installs it in the system's directory).
2. ``pkg-config semclient``: an installed library (``make install``, or
   the Debian package libsemclient-dev).

Extra flags come from ``CFLAGS``/``LDFLAGS`` as usual (an ASan build adds
``-fsanitize=address``).
"""
import os
import shlex
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def _fail(msg):
    sys.stderr.write("semclient: %s\n" % msg)
    sys.exit(1)


def _from_build_dir(build):
    build = os.path.abspath(build)
    libdir = os.path.join(build, "client", ".libs")
    if not os.path.exists(os.path.join(libdir, "libsemclient.so")):
        _fail("no %s/libsemclient.so: run make in %s first" % (libdir, build))
    src = os.path.join(HERE, "..", "client")
    if not os.path.exists(os.path.join(src, "semclient.h")):
        _fail("no semclient.h in %s: SEMCLIENT_BUILD_DIR needs the source tree" % src)
    rpath = [libdir] if os.environ.get("SEMCLIENT_RPATH", "1") != "0" else []
    return dict(include_dirs=[os.path.abspath(src)], library_dirs=[libdir],
                libraries=["semclient"], runtime_library_dirs=rpath)


def _from_pkg_config():
    try:
        out = subprocess.run(["pkg-config", "--cflags", "--libs", "semclient"],
                             check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        _fail("libsemclient not found: install libsemclient-dev (or run make install), "
              "or point SEMCLIENT_BUILD_DIR at a built source tree")
    cfg = dict(include_dirs=[], library_dirs=[], libraries=[], extra_compile_args=[])
    for flag in shlex.split(out):
        if flag.startswith("-I"):
            cfg["include_dirs"].append(flag[2:])
        elif flag.startswith("-L"):
            cfg["library_dirs"].append(flag[2:])
        elif flag.startswith("-l"):
            cfg["libraries"].append(flag[2:])
        else:
            cfg["extra_compile_args"].append(flag)
    return cfg


def _config():
    build_dir = os.environ.get("SEMCLIENT_BUILD_DIR")
    cfg = _from_build_dir(build_dir) if build_dir else _from_pkg_config()
    cfg.setdefault("extra_compile_args", []).extend(["-std=c11", "-Wall", "-Wextra"])
    if os.environ.get("SEMCLIENT_WERROR") == "1":   # the project's own warnings (configure.ac)
        cfg["extra_compile_args"].extend(["-Wshadow", "-Wstrict-prototypes",
                                          "-Wmissing-prototypes", "-Wformat=2", "-Wvla",
                                          "-Werror"])
    return cfg


class BuildExt(build_ext):
    """build_ext that finds libsemclient when it builds (not to clean)."""

    def build_extensions(self):
        cfg = _config()
        for ext in self.extensions:
            for key, value in cfg.items():
                getattr(ext, key).extend(value)
        super().build_extensions()


setup(packages=["semclient"], package_data={"semclient": ["py.typed", "*.pyi"]},
      ext_modules=[Extension("semclient._semclient",
                             ["src/_semclient.c", "src/values.c", "src/ctx.c", "src/ops.c"],
                             depends=["src/pysc.h"])],
      cmdclass={"build_ext": BuildExt})
