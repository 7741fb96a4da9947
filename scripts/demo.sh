#!/usr/bin/env bash
# Demo: build the kiln CLI (release preset), run `kiln simplify` on examples/simplify.txt, then
# `kiln check` on the kernel specs kiln ships (parse, check, schedule: kernels per spec kernel).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/deps.sh

input="${1:-examples/simplify.txt}"
kiln=build/release/kiln

# Build quietly; show the log only if something fails.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
quiet() { "$@" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }; }
[[ -f build/release/build.ninja ]] || quiet cmake --preset release
quiet cmake --build --preset release --target kiln

echo "== input ($input, with line numbers)"
awk 'NF { printf "%4d  %s\n", NR, $0 }' "$input"
echo
echo "== $kiln simplify $input"
"$kiln" simplify "$input"
echo
echo "== $kiln check kernels/*.kiln"
"$kiln" check kernels/*.kiln
