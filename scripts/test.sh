#!/usr/bin/env bash
# Configure, build and run every test (ctest) with the dev preset. Safe to re-run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/deps.sh
cmake --preset dev
cmake --build --preset dev
ctest --preset dev "$@"
