# tests/: shared test helpers. Each area's tests live in tests/<area>.mk.
EXTRA_DIST += tests/lib.sh
