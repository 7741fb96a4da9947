#!/usr/bin/env bash
# Configure, build and run every test (ctest) with the dev preset. Safe to re-run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/deps.sh
cmake --preset dev
cmake --build --preset dev
# the tests on every core, as CI runs them (ctest's own default is one at a time: 883 s on a 2-core
# EPYC, ~570 s on both); the one timed test is RUN_SERIAL. CTEST_PARALLEL_LEVEL or -j still win.
export CTEST_PARALLEL_LEVEL="${CTEST_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}"
ctest --preset dev "$@"
