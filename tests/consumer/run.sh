#!/usr/bin/env bash
# Builds and runs the consumer project exactly as a user would, against an *installed* kiln:
#   1. cmake --install the kiln build into a fresh prefix;
#   2. configure tests/consumer (a copy, so nothing in the checkout changes) with
#      find_package(kiln), build it with Ninja, run the app (it checks every result);
#   3. drive Ninja: a no-op build runs nothing; touching the spec re-runs kiln gen and nothing
#      else (its outputs keep their bytes); changing the spec regenerates and rebuilds the
#      library and relinks the app, and the app still passes;
#   4. two `kiln gen` runs write identical bytes.
# Usage: tests/consumer/run.sh <kiln build dir> <scratch dir>
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(cd "$1" && pwd)"
work="$2"
rm -rf "$work"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
fail() { echo "FAIL: $*" >&2; exit 1; }

echo "== install kiln into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cp -r "$here" "$work/src"
rm -f "$work/src/run.sh"

echo "== configure and build the consumer against it"
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build"

echo "== run the app"
"$work/build/app"

echo "== a no-op build runs nothing"
out="$(ninja -C "$work/build")"
[[ "$out" == *"ninja: no work to do."* ]] || fail "a no-op build ran: $out"

echo "== touching the spec re-runs kiln gen only (its outputs keep their bytes)"
sleep 1  # a coarse file system clock must see the touch
touch "$work/src/nn.kiln"
out="$(ninja -C "$work/build")"
echo "$out"
[[ "$out" == *"kiln gen nn"* ]] || fail "kiln gen did not run after touching the spec"
[[ "$out" != *"Building"* && "$out" != *"Linking"* ]] || fail "unchanged generated files were recompiled"
out="$(ninja -C "$work/build")"
[[ "$out" == *"ninja: no work to do."* ]] || fail "the build after a touch was not stable: $out"

echo "== changing the spec regenerates and rebuilds the library"
sleep 1
sed -i 's/specialize %64      # columns/specialize %32      # columns/' "$work/src/nn.kiln"
grep -q 'specialize %32' "$work/src/nn.kiln" || fail "the spec edit did not apply"
out="$(ninja -C "$work/build")"
echo "$out" | tail -n 5
[[ "$out" == *"kiln gen nn"* && "$out" == *"Building C object"* && "$out" == *"Linking CXX executable app"* ]] ||
  fail "a changed spec did not rebuild the library and relink the app"
"$work/build/app" >/dev/null || fail "the app failed after the spec changed"
out="$(ninja -C "$work/build")"
[[ "$out" == *"ninja: no work to do."* ]] || fail "the build after a change was not stable: $out"

echo "== the kernel files are compiled optimized in every build mode, keeping the mode's debug info"
# the compile commands Ninja would run for the kernel files (nn_nn_<target>.c), read without building
kernel_commands() {  # build dir, ninja file
  ninja -C "$1" -f "$2" -t commands nn | grep -E -- '-c [^ ]*nn_nn_(cpu|x86_64_avx2|x86_64_avx512)\.c' || true
}
last_opt() { grep -oE -- ' -O[0-3sgz]?( |$)' <<<"$1" | tail -n 1 | tr -d ' '; }
check_modes() {  # build dir, ninja file, mode, whether -g is expected
  local cmds n=0 cmd
  cmds="$(kernel_commands "$1" "$2")"
  while IFS= read -r cmd; do
    [[ -n "$cmd" ]] || continue
    n=$((n + 1))
    [[ "$(last_opt "$cmd")" == "-O3" ]] || fail "$3: a kernel file is not compiled with -O3 last: $cmd"
    if [[ "$4" == yes && " $cmd " != *" -g "* ]]; then fail "$3: a kernel file lost the mode's -g: $cmd"; fi
    if [[ "$cmd" == *nn_nn_x86_64_avx512.c* && "$cmd" != *-mavx512f* ]]; then fail "$3: no ISA flags: $cmd"; fi
  done <<<"$cmds"
  [[ $n -eq 3 ]] || fail "$3: expected 3 kernel compile commands, got $n"
  echo "  $3: the 3 kernel files get -O3 last$([[ "$4" == yes ]] && echo ", and -g")"
}
for mode in Debug RelWithDebInfo MinSizeRel None; do
  bt="$mode"; [[ "$mode" == None ]] && bt=""
  cmake -S "$work/src" -B "$work/mode-$mode" -G Ninja -DCMAKE_BUILD_TYPE="$bt" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
  debug=no; [[ "$mode" == Debug || "$mode" == RelWithDebInfo ]] && debug=yes
  check_modes "$work/mode-$mode" build.ninja "$mode" "$debug"
done
cmake -S "$work/src" -B "$work/mode-multi" -G "Ninja Multi-Config" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
check_modes "$work/mode-multi" build-Debug.ninja "Ninja Multi-Config, Debug" yes
check_modes "$work/mode-multi" build-Release.ninja "Ninja Multi-Config, Release" no
# the option that asks for the build mode's own flags: a Debug build's kernels are then -O0 ... -g
cmake -S "$work/src" -B "$work/mode-noopt" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKILN_OPTIMIZE_KERNELS=OFF \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmd="$(kernel_commands "$work/mode-noopt" build.ninja | head -n 1)"
[[ -n "$cmd" && "$(last_opt "$cmd")" != "-O3" ]] || fail "KILN_OPTIMIZE_KERNELS=OFF still optimizes: $cmd"
echo "  KILN_OPTIMIZE_KERNELS=OFF: the kernel files take the build mode's flags"

echo "== two kiln gen runs write identical bytes"
kiln="$work/prefix/bin/kiln"
"$kiln" gen --name nn --out "$work/gen1" --target cpu,x86_64-avx2,x86_64-avx512 "$work/src/nn.kiln"
"$kiln" gen --name nn --out "$work/gen2" --target cpu,x86_64-avx2,x86_64-avx512 "$work/src/nn.kiln"
rm "$work/gen1/nn.d" "$work/gen2/nn.d"  # the depfiles name their own directory
diff -r "$work/gen1" "$work/gen2" || fail "two kiln gen runs differ"

echo "consumer project: OK"
