#!/usr/bin/env bash
# Builds and runs the consumer project exactly as a user would, against an *installed* kiln:
#   1. cmake --install the kiln build into a fresh prefix;
#   2. configure tests/consumer (a copy, so nothing in the checkout changes) with
#      find_package(kiln), build it with Ninja, run the app (it checks every result, on the CPU
#      and, where an OpenCL platform is installed, through an OpenCL context) and the C99
#      program capp (the C entry points: results, and each bad call's status and message), and
#      a C call into nn's dispatch as another ABI's kiln would write it (refused, naming both);
#   3. drive Ninja: a no-op build runs nothing; touching the spec re-runs kiln gen and nothing
#      else (its outputs keep their bytes); changing the spec regenerates and rebuilds the
#      library and relinks the app, and the app still passes;
#   4. SIZE_BUDGET: a library within it builds, one byte under the larger target's kernels fails
#      the build (again on the next) with the target, its total and its largest variant named;
#   5. two `kiln gen` runs write identical bytes.
# Usage: tests/consumer/run.sh <kiln build dir> <scratch dir>
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../install_kiln.sh"
kiln_install "$1" "$2" "$here"

echo "== configure and build the consumer against it"
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build"

echo "== run the app"
# with an OpenCL platform installed (CI installs PoCL) every kernel runs there too, and must
export POCL_CACHE_DIR="$work/pocl-cache"
opencl=()
if compgen -G "/etc/OpenCL/vendors/*.icd" >/dev/null; then opencl=(--opencl); fi
"$work/build/app" "${opencl[@]}" | tee "$work/app.log"
if ((${#opencl[@]})); then
  grep -q "^OpenCL context: found " "$work/app.log" || fail "the app found no OpenCL device"
  (($(grep -c " on opencl, " "$work/app.log") >= 20)) || fail "the app's OpenCL calls did not take OpenCL variants"
fi
# gemm at M = 1 is a long reduction of few outputs: its OpenCL variant shares each over a work group
cl="$(find "$work/build" -name 'nn_*_opencl.cl' | head -1)"
[[ -n "$cl" ]] || fail "no OpenCL kernels were generated"
grep -q '__local float temp0\[' "$cl" && grep -q 'barrier(CLK_LOCAL_MEM_FENCE);' "$cl" ||
  fail "$cl has no grouped reduction (local memory and a barrier)"

# a CUDA context on this machine: without the driver (as on CI's machines) it says so, and the
# app's CPU calls after it still run; with a driver, the call through it is refused all the same
# (the library has CPU variants only)
grep -q "^CUDA context: " "$work/app.log" || fail "the app made no CUDA context"
# (the library list is read whole: grep -q stopping early would fail ldconfig with SIGPIPE)
cuda_driver="$(ldconfig -p 2>/dev/null | grep -c 'libcuda[.]so[.]1 ' || true)"
if ((cuda_driver == 0)); then
  grep -q "^CUDA context: no CUDA driver: libcuda.so.1 cannot be loaded" "$work/app.log" ||
    fail "a CUDA context on a machine without the driver did not say 'no CUDA driver'"
  grep -q "^gemm through it: gemm: no CUDA driver: " "$work/app.log" ||
    fail "a call through a CUDA context without the driver did not return the context's status"
fi

# with nvcc here the library has CUDA targets: their kernels are written as .cu, embedded in the
# dispatch as nvcc's fatbins, and neither compiled by the project nor archived
if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cu="$(find "$work/build" -name 'nn_*_cuda_sm90.cu' | head -1)"
  [[ -n "$cu" ]] || fail "no cuda-sm90 kernels were generated"
  grep -q 'extern "C" __global__ void ' "$cu" || fail "$cu has no CUDA kernels"
  grep -lq 'const unsigned char kFatbin_cuda_sm80\[\] = ' "$(dirname "$cu")"/nn_*_dispatch.cpp || fail "the dispatch embeds no cuda-sm80 fatbin"
  (($(ar t "$(find "$work/build" -name 'libnn.a' | head -1)" | grep -c 'cuda' || true) == 0)) || fail "the library archived a CUDA target's file"
  echo "  CUDA targets: $(find "$work/build" -name 'nn_*_cuda_sm*.cu' | wc -l) kernel files, embedded as fatbins"
  if ((cuda_driver > 0)) && grep -q "^CUDA context: found " "$work/app.log"; then
    (($(grep -c " on cuda-sm[89]0, " "$work/app.log") >= 20)) || fail "the app's CUDA calls did not take CUDA variants"
  fi
fi

# KILN_CPU_FEATURES keeps only the features it names: each x86 target's variants run here, and
# are checked, whatever this CPU's best is; a list with an unknown name is reported and ignored
echo "== the app with KILN_CPU_FEATURES=avx2, then none"
if grep -q '^kiln consumer app: kernels of nn.kiln on a CPU with avx2' "$work/app.log"; then
  KILN_CPU_FEATURES=avx2 "$work/build/app" >"$work/avx2.log" 2>&1 || { cat "$work/avx2.log"; fail "the app failed with avx2 alone"; }
  grep -q "on x86_64-avx512" "$work/avx2.log" && fail "a call took an x86_64-avx512 variant with KILN_CPU_FEATURES=avx2"
  grep -q "on x86_64-avx2" "$work/avx2.log" || fail "no call took an x86_64-avx2 variant with KILN_CPU_FEATURES=avx2"
  grep -q "^all results match the reference" "$work/avx2.log" || fail "the app did not check its results with avx2 alone"
  echo "  avx2: $(grep -c 'on x86_64-avx2' "$work/avx2.log") calls on x86_64-avx2"
fi
KILN_CPU_FEATURES=none "$work/build/app" >"$work/none.log" 2>&1 || { cat "$work/none.log"; fail "the app failed with none"; }
grep -q "^kiln consumer app: kernels of nn.kiln on a CPU with none$" "$work/none.log" || fail "KILN_CPU_FEATURES=none kept a feature"
grep -q "on x86_64-" "$work/none.log" && fail "a call took an x86 variant with KILN_CPU_FEATURES=none"
grep -q "^all results match the reference" "$work/none.log" || fail "the app did not check its results with none"
echo "  none: $(grep -c ' on cpu' "$work/none.log") calls on cpu"
KILN_CPU_FEATURES="avx2,sse9" "$work/build/app" >"$work/bad.log" 2>"$work/bad.err" || fail "the app failed with an unknown feature"
[[ "$(cat "$work/bad.err")" == "kiln: KILN_CPU_FEATURES: unknown feature 'sse9': the list is ignored (known: avx2 avx512 neon rvv sve256 asimd none)" ]] ||
  fail "an unknown feature: $(cat "$work/bad.err")"
[[ "$(grep '^kiln consumer app' "$work/bad.log")" == "$(grep '^kiln consumer app' "$work/app.log")" ]] ||
  fail "a list with an unknown feature was not ignored"

echo "== run the C program (C99, -Wall -Werror)"
"$work/build/capp"
grep -q -- "-std=c99" <<<"$(ninja -C "$work/build" -t commands capp | grep -F capp.c)" ||
  fail "capp.c is not compiled as C99"

echo "== a library generated for another kiln ABI is refused at its first call, naming both"
# nn's dispatch as a kiln of ABI 2 would have written it, linked ahead of libnn.a's own: the same
# C call through it is refused, and through libnn.a's runs
mkdir -p "$work/abi"
cat >"$work/abi/abi.c" <<'EOF'
#include <stdio.h>

#include "nn.h"

int main(void) {
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {0, 0, 0, 0};
  kiln_tensor ta = {a, KILN_FLOAT32, 2, {2, 2}, 0, 0}, tb = {b, KILN_FLOAT32, 2, {2, 2}, 0, 0};
  kiln_tensor tc = {c, KILN_FLOAT32, 2, {2, 2}, 1, 0};
  kiln_context* ctx = NULL;
  kiln_status_t s = kiln_context_create(1, NULL, &ctx);
  if (s != NULL) return 2;
  s = nn_gemm(&ta, &tb, &tc, ctx);
  printf("%s: %s (c[3] = %g)\n", kiln_status_name(kiln_status_code(s)), kiln_status_message(s), (double)c[3]);
  kiln_status_free(s);
  kiln_context_destroy(ctx);
  return 0;
}
EOF
gen="$work/build/kiln-gen/nn"
grep -q 'abi_check(1, "nn")' "$gen/nn_nn_dispatch.cpp" || fail "the dispatch does not check the runtime's ABI"
sed 's/abi_check(1, "nn")/abi_check(2, "nn")/g' "$gen/nn_nn_dispatch.cpp" >"$work/abi/dispatch_abi2.cpp"
cc -std=c99 -Wall -Werror -I "$gen" -I "$work/prefix/include" -c "$work/abi/abi.c" -o "$work/abi/abi.o"
c++ -std=c++17 -O1 -I "$gen" -I "$work/prefix/include" -c "$work/abi/dispatch_abi2.cpp" -o "$work/abi/dispatch_abi2.o"
runtime_lib="$(find "$work/prefix" -name 'libkiln_runtime.a' -print -quit)"
c++ "$work/abi/abi.o" "$work/abi/dispatch_abi2.o" "$work/build/libnn.a" "$runtime_lib" -lpthread -lm -o "$work/abi/abi2"
c++ "$work/abi/abi.o" "$work/build/libnn.a" "$runtime_lib" -lpthread -lm -o "$work/abi/abi1"
out="$("$work/abi/abi2")"
echo "  $out"
refusal="UNSUPPORTED: nn: generated for kiln ABI 2, but this runtime speaks ABI 1 (generate it again with the kiln"
[[ "$out" == "$refusal"* && "$out" == *"(c[3] = 0)" ]] || fail "a library of another ABI was not refused: $out"
out="$("$work/abi/abi1")"
[[ "$out" == "OK:  (c[3] = 4)" ]] || fail "the library of this ABI did not run: $out"

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
kiln="$work/prefix/bin/kiln"
# tests/consumer/CMakeLists.txt's TARGETS, but the CUDA ones (${cuda_targets}: checked above)
read -r -a consumer_targets <<<"$(python3 -c '
import re, sys
m = re.search(r"kiln_add_library\(nn SPECS nn.kiln TARGETS ([^)]*)\)", open(sys.argv[1]).read())
print(" ".join(t for t in m.group(1).split() if not t.startswith("$")) if m else "")' "$here/CMakeLists.txt")"
[[ ${#consumer_targets[@]} -gt 0 ]] || fail "no TARGETS in tests/consumer/CMakeLists.txt"
# what kiln writes for them (its table, kiln targets --json): "<symbol> <output> <flag,flag...> <arch>"
target_rows="$("$kiln" targets --json | python3 -c '
import json, sys
for t in json.load(sys.stdin):
    if t["name"] in sys.argv[1:]:
        print(t["symbol"], t["output"], ",".join(t["c_flags"]) or "-", t["arch"])' "${consumer_targets[@]}")"
c_symbols="$(awk '$2 == "c" {print $1}' <<<"$target_rows" | paste -sd'|')"
# objects of this machine's architecture are linked; the others' are made and left out
object_symbols="$(awk '$2 == "object" && $4 == "x86_64" {print $1}' <<<"$target_rows" | xargs)"
foreign_symbols="$(awk '$2 == "object" && $4 != "x86_64" {print $1}' <<<"$target_rows" | xargs)"
# OpenCL's kernels are a source file the dispatch embeds: neither compiled nor archived
opencl_symbols="$(awk '$2 == "opencl" {print $1}' <<<"$target_rows" | xargs)"
n_c="$(awk '$2 == "c"' <<<"$target_rows" | wc -l)"
[[ $((n_c + $(wc -w <<<"$object_symbols $foreign_symbols $opencl_symbols"))) -eq ${#consumer_targets[@]} ]] ||
  fail "kiln targets lacks a consumer target"
# the compile commands Ninja would run for the C targets' kernel files (nn_nn_<symbol>.c), read
# without building
kernel_commands() {  # build dir, ninja file
  [[ -n "$c_symbols" ]] || return 0
  ninja -C "$1" -f "$2" -t commands nn | grep -E -- "-c [^ ]*nn_nn_($c_symbols)\.c" || true
}
last_opt() { grep -oE -- ' -O[0-3sgz]?( |$)' <<<"$1" | tail -n 1 | tr -d ' '; }
check_modes() {  # build dir, ninja file, mode, whether -g is expected
  local cmds n=0 cmd sym flags f
  cmds="$(kernel_commands "$1" "$2")"
  while IFS= read -r cmd; do
    [[ -n "$cmd" ]] || continue
    n=$((n + 1))
    [[ "$(last_opt "$cmd")" == "-O3" ]] || fail "$3: a kernel file is not compiled with -O3 last: $cmd"
    if [[ "$4" == yes && " $cmd " != *" -g "* ]]; then fail "$3: a kernel file lost the mode's -g: $cmd"; fi
    while read -r sym _ flags _; do  # a C target's file gets the target's flags (x86_64 here)
      [[ "$cmd" == *"nn_nn_$sym.c"* && "$flags" != - ]] || continue
      for f in ${flags//,/ }; do [[ " $cmd " == *" $f "* ]] || fail "$3: $sym lacks $f: $cmd"; done
    done <<<"$target_rows"
  done <<<"$cmds"
  [[ $n -eq $n_c ]] || fail "$3: expected $n_c kernel compile commands, got $n"
  # an object target's kernels are kiln's objects: nothing compiles them, the library archives them
  local all
  all="$(ninja -C "$1" -f "$2" -t commands nn)"
  for sym in $object_symbols; do
    grep -qE -- "-c [^ ]*nn_nn_$sym\." <<<"$all" && fail "$3: the $sym kernels are compiled: they are objects"
    [[ "$(grep -F -- "libnn.a" <<<"$all")" == *" kiln-gen/nn/nn_nn_$sym.o "* ]] ||
      fail "$3: the library does not archive nn_nn_$sym.o"
  done
  for sym in $foreign_symbols; do
    grep -qF -- "nn_nn_$sym.o" <<<"$(grep -F -- "libnn.a" <<<"$all")" &&
      fail "$3: the library archives nn_nn_$sym.o, another architecture's"
  done
  for sym in $opencl_symbols; do
    grep -qF -- "nn_nn_$sym.cl" <<<"$all" && fail "$3: nn_nn_$sym.cl is compiled or archived: the dispatch embeds it"
  done
  echo "  $3: the $n_c C kernel files get -O3 last$([[ "$4" == yes ]] && echo ", and -g"); objects:" \
    "${object_symbols:-none} (not linked here: ${foreign_symbols:-none})"
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

echo "== an unknown target is a configure error that lists the known ones"
mkdir -p "$work/bad-target"
cp "$work/src/nn.kiln" "$work/bad-target/"
cat >"$work/bad-target/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(bad_target LANGUAGES C CXX)
find_package(kiln REQUIRED)
kiln_add_library(nn SPECS nn.kiln TARGETS cpu avx9)
EOF
if cmake -S "$work/bad-target" -B "$work/bad-target/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  >"$work/bad-target.log" 2>&1; then
  fail "a library with target avx9 configured"
fi
known="$("$kiln" targets --json | python3 -c 'import json,sys; print(", ".join(sorted(t["name"] for t in json.load(sys.stdin))))')"
# CMake wraps its messages: compare with the white space squeezed
tr -s ' \n' '  ' <"$work/bad-target.log" | grep -qF "unknown target 'avx9' (known: $known)" ||
  fail "the configure error does not list the known targets: $(cat "$work/bad-target.log")"
echo "  unknown target 'avx9' (known: $known)"

echo "== SIZE_BUDGET: each target's kernels as linked; one byte too few fails the build, naming the largest"
mkdir -p "$work/budget"
cp "$work/src/nn.kiln" "$work/src/app.cpp" "$work/budget/"
cat >"$work/budget/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(budget LANGUAGES C CXX)
find_package(kiln REQUIRED)
kiln_add_library(nn SPECS nn.kiln TARGETS cpu x86_64-avx2 SIZE_BUDGET ${BUDGET})
add_executable(app app.cpp)
target_link_libraries(app PRIVATE nn)
EOF
budget_build() {  # budget: configure with it and build; the build's output in $out, its status returned
  cmake -S "$work/budget" -B "$work/budget/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUDGET="$1" \
    -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
  local rc=0
  out="$(ninja -C "$work/budget/build" 2>&1)" || rc=$?
  return $rc
}
budget_build 1000000000 || fail "a library within its SIZE_BUDGET failed to build: $out"
[[ "$out" == *"within the budget of 1000000000 bytes per target"* ]] || fail "the budget was not checked: $out"
# the larger target's total and its largest variant, measured in the archive the app links
read -r big big_bytes largest <<<"$("$kiln" size --json "$work/budget/build/kiln-gen/nn/nn.manifest.json" \
  "$work/budget/build/libnn.a" | python3 -c '
import json, sys
m = json.load(sys.stdin)
t = max((t["code_bytes"] + t["data_bytes"], t["name"]) for t in m["targets"])
v = max((v["code_bytes"] + v["data_bytes"], v["variant"]) for v in m["variants"] if v["target"] == t[1])
print(t[1], t[0], v[1])')"
rm -f "$work/budget/build/app"
for try in 1 2; do  # the next build checks again: a failed check is not forgotten
  if budget_build $((big_bytes - 1)); then fail "a library over its SIZE_BUDGET built: $out"; fi
  [[ "$out" == *"kiln: error: nn: the kernels of target $big take $big_bytes bytes (code "* ]] ||
    fail "the budget error does not name the target and its total: $out"
  [[ "$out" == *"over the size budget of $((big_bytes - 1)) bytes"* ]] ||
    fail "the budget error lacks the budget: $out"
  [[ "$out" == *"its largest variants:"$'\n'"    $largest: "* ]] ||
    fail "the budget error does not name $largest first: $out"
  [[ ! -e "$work/budget/build/app" ]] || fail "the app linked a library over its SIZE_BUDGET"
done
echo "  $big: $big_bytes bytes; SIZE_BUDGET $((big_bytes - 1)) fails naming $largest first"
budget_build "$big_bytes" || fail "a library exactly at its SIZE_BUDGET failed: $out"
[[ -x "$work/budget/build/app" ]] || fail "the app was not linked once the library fit its budget"
if cmake -S "$work/budget" -B "$work/budget/bad" -G Ninja -DBUDGET=10k -DCMAKE_PREFIX_PATH="$work/prefix" \
  >"$work/budget.log" 2>&1; then
  fail "SIZE_BUDGET 10k configured"
fi
grep -qF "SIZE_BUDGET takes a number of bytes (got '10k')" "$work/budget.log" || fail "$(cat "$work/budget.log")"

echo "== two kiln gen runs write identical bytes"
"$kiln" gen --name nn --out "$work/gen1" --target cpu,x86_64-avx2,x86_64-avx512 "$work/src/nn.kiln"
"$kiln" gen --name nn --out "$work/gen2" --target cpu,x86_64-avx2,x86_64-avx512 "$work/src/nn.kiln"
rm "$work/gen1/nn.d" "$work/gen2/nn.d"  # the depfiles name their own directory
diff -r "$work/gen1" "$work/gen2" || fail "two kiln gen runs differ"

echo "consumer project: OK"
