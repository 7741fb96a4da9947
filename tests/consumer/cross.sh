#!/usr/bin/env bash
# Cross-builds the consumer project as a user does: an ordinary toolchain file
# (tests/consumer/toolchains/), the build host's *installed* kiln through -Dkiln_DIR (kiln runs on
# the host; the runtime is compiled for the target from the sources the package ships), Ninja.
# Then checks what was built and runs the app under qemu-user through ctest (the toolchain's
# CMAKE_CROSSCOMPILING_EMULATOR): every kernel must match its reference, every bad call must be
# refused (the app, and capp through the C entry points, check both and fail otherwise), and the
# variants of the target's object target must be the ones taken.
# With the target that stands in where the feature is missing and an emulator command for a CPU
# without it (the rest of the arguments), the app runs there too: the dispatch must take that
# target's variants (the portable cpu ones, or aarch64-neon for aarch64-sve256), and they must match.
# Usage: tests/consumer/cross.sh <kiln build dir> <scratch dir> <toolchain file> <target> <ELF machine>
#        [<fallback target> <emulator for a CPU without the feature>...]
#   e.g. ... toolchains/arm-linux-gnueabihf.cmake armv7-neon ARM cpu qemu-arm-static -cpu cortex-r5f -L ...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../install_kiln.sh"
toolchain="$(cd "$(dirname "$3")" && pwd)/$(basename "$3")"
target="$4"
machine="$5"
kiln_install "$1" "$2" "$here"
shift 5
fallback="${1:-}"
[[ $# -gt 0 ]] && shift
without=("$@")

echo "== configure with $(basename "$toolchain") and -Dkiln_DIR, build"
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
  -Dkiln_DIR="$(dirname "$config")" >"$work/configure.log" || { cat "$work/configure.log"; fail "configure"; }
cmake --build "$work/build"

echo "== what was built is the target's"
is_machine() {  # file: whether it is code for $machine (an ELF machine, or WebAssembly's magic)
  if [[ "$machine" == WebAssembly ]]; then
    [[ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' \n')" == 0061736d ]]
  else
    readelf -h "$1" | grep -q "Machine: *$machine"
  fi
}
app="$work/build/app"
is_machine "$app" || fail "app is not a $machine program: $(file "$app")"
symbol="${target//-/_}"
members="$(ar t "$work/build/libnn.a" 2>/dev/null || llvm-ar-19 t "$work/build/libnn.a")"
grep -qx "nn_nn_$symbol.o" <<<"$members" || fail "libnn.a does not archive kiln's $target objects: $members"
# every object target of kiln's table for another architecture
others="$("$work/prefix/bin/kiln" targets --json | python3 -c '
import json, sys
table = json.load(sys.stdin)
arch = next(t["arch"] for t in table if t["name"] == sys.argv[1])
print(" ".join(t["symbol"] for t in table if t["output"] == "object" and t["arch"] != arch))' "$target")"
for other in $others; do
  [[ "$other" == "$symbol" ]] && continue
  grep -qx "nn_nn_$other.o" <<<"$members" && fail "libnn.a archives nn_nn_$other.o, another architecture's objects"
done
is_machine "$work/build/kiln-gen/nn/nn_nn_$symbol.o" || fail "nn_nn_$symbol.o is not a $machine object"
echo "  app and nn_nn_$symbol.o: $machine; libnn.a: $(tr '\n' ' ' <<<"$members")"

echo "== run the app under the emulator (ctest)"
ctest --test-dir "$work/build" --output-on-failure -V >"$work/run.log" 2>&1 || { cat "$work/run.log"; fail "the app failed"; }
grep -E "^[0-9]+: " "$work/run.log" | sed 's/^[0-9]*: //' | tee "$work/app.log" | head -n 40
grep -q "on $target" "$work/app.log" || fail "no call took a $target variant"
grep -q "^C entry points: all results match the reference" "$work/app.log" || fail "the C program did not pass"
echo "  $(grep -c "on $target" "$work/app.log") calls took $target variants"
if [[ ${#without[@]} -gt 0 ]]; then
  echo "== on a CPU without $target's feature (${without[*]}): the $fallback variants"
  "${without[@]}" "$work/build/app" >"$work/without.log" 2>&1 || { cat "$work/without.log"; fail "the app failed there"; }
  grep -q "on $target" "$work/without.log" && fail "a call took a $target variant on a CPU without its feature"
  grep -q "all results match the reference" "$work/without.log" || fail "the app did not check its results there"
  grep -q " on $fallback" "$work/without.log" || fail "no call took a $fallback variant there"
  echo "  $(grep -c " on $fallback" "$work/without.log") calls took $fallback variants; $(grep "^kiln consumer app" "$work/without.log")"
fi
echo "cross consumer ($target): OK"
