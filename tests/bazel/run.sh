#!/usr/bin/env bash
# kiln with Bazel, as CI and a user run it (offline: Debian's Bazel 4 and apt-installed deps):
#   1. kiln's own workspace: every target analysed, and the targets, flags and objects
#      kiln_library() picks per platform and compilation mode (aquery, cquery); KILN_BAZEL_ALL=1:
#      bazel test //... there too (the unit tests), then again: a no-op that runs nothing;
#   2. this workspace (a user's: local_repository -> kiln): bazel test //... with kiln's own
#      Bazel tests (@kiln//kernels/... and the generated dispatch and no-heap runtime tests, kiln's
#      code with -Werror: --config=werror, .bazelrc) and the app, a no-op that runs nothing, and a
#      changed spec re-runs only that spec's actions; size_budget within and over; the app
#      cross-built for aarch64 with a user's C++ toolchain (toolchains/) and run under qemu;
#   3. the files kiln_library() writes are byte-identical to kiln_add_library()'s (CMake) and
#      kiln gen's for the same specs and targets, when a CMake build directory is given.
# (kiln's tests run here, not in kiln's workspace: each workspace has its own output base, so
# building them there compiled the generator a second time, ~4 minutes of CI on 2 cores.)
# Usage: tests/bazel/run.sh [<CMake build dir that built kiln_kernels and kiln_gen_test>]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cmake_build="${1:-}"
[[ -z "$cmake_build" ]] || cmake_build="$(cd "$cmake_build" && pwd)"
work="$(mktemp -d)"
spec_backup="$work/norm.kiln"
cp "$here/norm.kiln" "$spec_backup"
cleanup() {
  cp "$spec_backup" "$here/norm.kiln"
  rm -rf "$here/bad_target" "$here/budget" "$here/tuned"
  (cd "$here" && bazel shutdown) || true
  (cd "$root" && bazel shutdown) || true
  rm -rf "$work"
}
trap cleanup EXIT

fail=0
check() {  # name, expected, actual
  if [[ "$2" == "$3" ]]; then
    echo "ok: $1"
  else
    echo "FAIL: $1"
    echo "  expected: $2"
    echo "  actual:   $3"
    fail=1
  fi
}

# the actions an execution log (--execution_log_json_file) says ran: "<mnemonic> <progress message>"
actions() {
  python3 - "$1" <<'PY'
import json, sys
text, dec, i = open(sys.argv[1]).read(), json.JSONDecoder(), 0
while True:
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    spawn, i = dec.raw_decode(text, i)
    print(spawn.get("mnemonic", "?"), spawn.get("progressMessage", ""))
PY
}

timed() {  # label, command...: runs it, prints its wall time
  local label="$1" start=$SECONDS
  shift
  "$@"
  echo "=== $label: $((SECONDS - start)) s"
}

bz=(--config=offline)

echo "== kiln's workspace: $root"
cd "$root"
# Every target analyses. What kiln_library() users build (kiln as a tool, the generated libraries,
# their tests and the runtime's) is built and tested from the consumer's workspace below; the unit
# tests and //:kiln in the target configuration compile the generator once more (CMake's ctest runs
# the same unit tests), so only KILN_BAZEL_ALL=1 builds and tests all of //... here.
timed "bazel build --nobuild //... (kiln: every target analyses)" bazel build "${bz[@]}" --nobuild //...
if [[ "${KILN_BAZEL_ALL:-0}" == 1 ]]; then
  timed "bazel test //... (kiln)" bazel test "${bz[@]}" --config=werror //...
  timed "no-op bazel test //... (kiln)" \
    bazel test "${bz[@]}" --config=werror //... --execution_log_json_file="$work/noop.json"
  check "kiln: a no-op build runs nothing" "" "$(actions "$work/noop.json")"
fi

# targets follow the target platform and the legacy --cpu: the x86_64 ones and cpu with the Unix
# toolchain (this machine), aarch64-sve256, aarch64-neon and cpu on an aarch64 platform, cpu alone
# for a legacy ARM cross build (--cpu picks no platform)
kernel_actions() {
  bazel aquery "${bz[@]}" "$@" 'mnemonic("KilnGenKernels", //kernels:kiln_kernels_files)' 2>/dev/null |
    sed -n "s/^action 'kiln gen kiln_kernels: kernels\/nn.kiln for \(.*\)'$/\1/p" | sort | tr '\n' ' '
}
check "kiln: kiln_library's targets on x86_64" "cpu x86_64-avx2 x86_64-avx512 " "$(kernel_actions)"
check "kiln: kiln_library's targets on aarch64" "aarch64-neon aarch64-sve256 cpu " \
  "$(kernel_actions --platforms=//bazel:linux_aarch64)"
check "kiln: kiln_library's targets on armv7" "armv7-neon cpu " "$(kernel_actions --platforms=//bazel:linux_armv7)"
check "kiln: kiln_library's targets with --cpu=armeabi-v7a" "cpu " "$(kernel_actions --cpu=armeabi-v7a)"

# the C kernel files (the cpu target's) are compiled with -O3 (last) in every compilation mode; dbg
# keeps its -g
kernel_compile() {  # bazel options...: the -O and -g flags of the cpu kernel file's compile
  bazel aquery "${bz[@]}" "$@" 'mnemonic("CppCompile", //kernels:kiln_kernels_kernels_cpu_lib)' 2>/dev/null |
    awk '!done && /Command Line/ { f = 1 } f { print } f && /\)$/ { f = 0; done = 1 }' | tr ' ' '\n' |
    grep -E -- '^-(O[0-3sgz]?|g[0-9]?)$'
}
for mode in fastbuild dbg opt; do
  flags="$(kernel_compile -c "$mode")"
  check "kiln: kernels under -c $mode: -O3 is the last -O" "-O3" "$(grep -- '^-O' <<<"$flags" | tail -n 1)"
done
check "kiln: kernels under -c dbg keep -g" "1" "$(kernel_compile -c dbg | grep -c -- '^-g$')"
check "kiln: --define=kiln_optimize_kernels=false: no -O3" "0" \
  "$(kernel_compile -c dbg --define=kiln_optimize_kernels=false | grep -c -- '^-O3$')"
# the object targets' kernels are kiln's objects: never compiled, linked as they are (x86_64 only)
linked_objects() {  # cc_library label, bazel options...: the object files it links, or "none"
  local label="$1"
  shift
  bazel cquery "${bz[@]}" "$@" --output=starlark --starlark:expr='" ".join([o.basename for li in providers(target)["CcInfo"].linking_context.linker_inputs.to_list() for lib in li.libraries for o in (lib.objects or []) + (lib.pic_objects or [])]) or "none"' \
    "$label" 2>/dev/null
}
for t in x86_64_avx2 x86_64_avx512; do
  check "kiln: the $t kernels are not compiled" "0" \
    "$(bazel aquery "${bz[@]}" "mnemonic(\"CppCompile\", //kernels:kiln_kernels_kernels_${t}_lib)" 2>/dev/null |
      grep -c '^action ' || true)"
  check "kiln: the $t library links kiln's objects" "kiln_kernels_nn_$t.o kiln_kernels_examples_$t.o" \
    "$(linked_objects "//kernels:kiln_kernels_kernels_${t}_lib")"
  # off x86_64 (a legacy ARM cross build: the one other C++ toolchain Bazel 4 configures here)
  check "kiln: no $t objects with --cpu=armeabi-v7a" "none" \
    "$(linked_objects "//kernels:kiln_kernels_kernels_${t}_lib" --cpu=armeabi-v7a)"
done

echo "== the consumer workspace: $here"
cd "$here"
# C++ toolchains by platform, as Bazel 7 does by default: the host's, and a user's cross toolchain
# (toolchains/: Debian's aarch64-linux-gnu-g++) for the cross build at the end. The same options
# on every build here, so kiln (a tool, built for the host) is built once; --config=werror: kiln's
# code (external/kiln) with -Werror, as in kiln's own workspace.
bz+=(--incompatible_enable_cc_toolchain_resolution --extra_toolchains=//toolchains:aarch64_linux_gnu --config=werror)
all_tests=(//... @kiln//kernels/... @kiln//tests/gen/... @kiln//tests/noheap/...)
timed "bazel test ${all_tests[*]} (consumer and kiln's tests, cold)" bazel test "${bz[@]}" "${all_tests[@]}"
app_out="$(bazel run "${bz[@]}" //:app 2>/dev/null)"
echo "$app_out"
check "consumer: the app's results" "2" "$(grep -c ': ok$' <<<"$app_out")"
timed "no-op bazel test ${all_tests[*]}" \
  bazel test "${bz[@]}" "${all_tests[@]}" --execution_log_json_file="$work/noop.json"
check "consumer: a no-op build and test runs nothing" "" "$(actions "$work/noop.json")"

if [[ -n "$cmake_build" ]]; then
  bin="$(bazel info "${bz[@]}" bazel-bin 2>/dev/null)"
  for lib in kernels/kiln_kernels tests/gen/kiln_gen_test; do
    name="${lib##*/}"
    out="$bin/external/kiln/$lib"
    # every file Bazel wrote, as its manifest lists them, as CMake wrote it (both output directories
    # may keep files of older layouts)
    check "kiln: Bazel's $name files are CMake's, byte for byte" "" \
      "$(for f in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["files"]))' \
        "$out/$name.manifest.json"); do
        cmp "$out/$f" "$cmake_build/kiln-gen/$name/$f" 2>&1
      done)"
    check "kiln: Bazel wrote $name's files" "1" "$(ls "$out" | grep -c "^$name.manifest.json$")"
  done
fi

# a new bucket in norm.kiln: its spec and kernel actions, the library's (its kernels changed),
# the compiles of its files, the links and the test; nothing of mlp.kiln
sed -i 's/specialize %64/specialize %64, %32/' norm.kiln
timed "bazel test //... after changing norm.kiln" \
  bazel test "${bz[@]}" //... --execution_log_json_file="$work/change.json"
actions "$work/change.json" >"$work/change.txt"
check "consumer: kiln's actions after changing norm.kiln" \
  "KilnGenKernels kiln gen hz: norm.kiln for aarch64-neon
KilnGenKernels kiln gen hz: norm.kiln for aarch64-sve256
KilnGenKernels kiln gen hz: norm.kiln for cpu
KilnGenKernels kiln gen hz: norm.kiln for x86_64-avx2
KilnGenKernels kiln gen hz: norm.kiln for x86_64-avx512
KilnGenLibrary kiln gen hz: hz.h
KilnGenSpec kiln gen hz: norm.kiln" "$(grep '^KilnGen' "$work/change.txt" | sort)"
check "consumer: nothing of mlp.kiln is compiled again" "" "$(grep -i 'mlp' "$work/change.txt" || true)"
# its dispatch source and the cpu target's C (the x86 targets' kernels are objects)
check "consumer: norm.kiln's files are compiled again" "2" "$(grep -c '^CppCompile.*hz_norm' "$work/change.txt")"
cp "$spec_backup" norm.kiln

# an unknown target fails the analysis with the known ones listed (from kiln's table)
mkdir -p bad_target
cp norm.kiln bad_target/
printf '%s\n' 'load("@kiln//bazel:defs.bzl", "kiln_library")' '' \
  'kiln_library(name = "bad", specs = ["norm.kiln"], targets = ["cpu", "avx9"])' >bad_target/BUILD.bazel
bad_out="$(bazel build "${bz[@]}" //bad_target:bad 2>&1 || true)"
rm -rf bad_target
check "consumer: an unknown target lists the known ones" "1" \
  "$(grep -c "kiln_library(bad): unknown target 'avx9' (known: aarch64-neon, aarch64-sve256, armv7-neon, cortex-m4, cpu, cuda-sm80, cuda-sm90, opencl, riscv64-rvv, wasm32-simd128, x86_64-avx2, x86_64-avx512)" <<<"$bad_out")"

# size_budget: a library within it builds; one too small fails the build, naming the target, its
# total and its largest variants (kiln size --budget on the kernel libraries as compiled)
mkdir -p budget
cp norm.kiln budget/
printf '%s\n' 'load("@kiln//bazel:defs.bzl", "kiln_library")' '' \
  'kiln_library(name = "fits", specs = ["norm.kiln"], targets = ["cpu"], size_budget = 100000000)' \
  'kiln_library(name = "over", specs = ["norm.kiln"], targets = ["cpu"], size_budget = 100)' >budget/BUILD.bazel
fits_rc=0
fits_out="$(bazel build "${bz[@]}" //budget:fits 2>&1)" || fits_rc=$?
over_rc=0
over_out="$(bazel build "${bz[@]}" //budget:over 2>&1)" || over_rc=$?
rm -rf budget
check "consumer: a library within its size_budget builds" "0" "$fits_rc"
check "consumer: a library over its size_budget fails the build" "failed" "$([[ $over_rc -ne 0 ]] && echo failed)"
over_error="kiln: error: over: the kernels of target cpu take [0-9]+ bytes \(code [0-9]+, data [0-9]+\), over the size"
check "consumer: the size_budget error names the target, its total and the budget" "1" \
  "$(grep -cE "$over_error budget of 100 bytes" <<<"$over_out")"
check "consumer: the size_budget error names the largest variants" "1" \
  "$(grep -c "its largest variants:" <<<"$over_out")"

if [[ -n "$cmake_build" ]]; then
  "$cmake_build/kiln" gen --name hz --out "$work/hz" --target cpu,x86_64-avx2,x86_64-avx512,aarch64-sve256,aarch64-neon \
    mlp.kiln norm.kiln
  bazel build "${bz[@]}" //:hz //:hz_files  # the files themselves: an object nothing links yet is not built for //:hz
  # the files kiln gen wrote, as Bazel wrote them (bazel-bin may keep files of older layouts)
  check "consumer: Bazel's files are kiln gen's, byte for byte" "" \
    "$(for f in $(ls "$work/hz" | grep -vx hz.d); do cmp "$work/hz/$f" "bazel-bin/hz/$f" 2>&1; done)"
  # tune_db: kiln tune's database passed to the spec's and kernels' actions: the files are kiln gen
  # --tune-db's (an entry on the key kiln tune --list gives: THREAD alone on norm's generic variant)
  mkdir -p tuned
  cp norm.kiln tuned/
  key="$("$cmake_build/kiln" tune --list --name tuned --target cpu --db none norm.kiln | grep ' cpu any ' | head -1)"
  printf '%s opts=- block=0\n' "$key" >tuned/norm.tune
  printf '%s\n' 'load("@kiln//bazel:defs.bzl", "kiln_library")' '' \
    'kiln_library(name = "tuned", specs = ["norm.kiln"], targets = ["cpu"], tune_db = "norm.tune")' >tuned/BUILD.bazel
  "$cmake_build/kiln" gen --name tuned --out "$work/tuned" --target cpu --tune-db tuned/norm.tune tuned/norm.kiln
  bazel build "${bz[@]}" //tuned:tuned_files
  check "consumer: tune_db: Bazel's files are kiln gen --tune-db's" "" \
    "$(for f in $(ls "$work/tuned" | grep -vx tuned.d); do cmp "$work/tuned/$f" "bazel-bin/tuned/tuned/$f" 2>&1; done)"
  check "consumer: tune_db: the entry's opts (none) in the manifest" "1" \
    "$(grep -c '"opts": \[\]' "$work/tuned/tuned_norm.manifest.json")"
  rm -rf tuned
fi

# a cross build, as a user who brings a C++ toolchain for the target runs it: the app for an
# aarch64 platform, kiln itself built for the host and run there; the app links the aarch64 objects, not the x86 ones, and runs under qemu-aarch64
# (its default CPU has 512-bit SVE: the aarch64-sve256 variants)
# (Bazel 4 names the output directory after --cpu, which toolchain resolution leaves at k8: the
# suffix keeps the aarch64 outputs apart from the host's)
cross=(--platforms=@kiln//bazel:linux_aarch64 --platform_suffix=-aarch64)
timed "bazel build //:app for aarch64 (toolchain resolution)" bazel build "${bz[@]}" "${cross[@]}" //:app
cross_app="$(bazel cquery "${bz[@]}" "${cross[@]}" --output=starlark \
  --starlark:expr='target.files.to_list()[0].path' //:app 2>/dev/null)"
check "consumer: the aarch64 app is an AArch64 program" "1" "$(readelf -h "$cross_app" | grep -c 'Machine: *AArch64')"
cross_symbols="$(nm "$cross_app")"
check "consumer: the aarch64 app links the aarch64 kernels, not the x86 ones" "1 1 0" \
  "$(grep -q ' T hz_gemm_.*_aarch64_sve256$' <<<"$cross_symbols" && echo 1) \
$(grep -q ' T hz_gemm_.*_aarch64_neon$' <<<"$cross_symbols" && echo 1) $(grep -c '_x86_64_' <<<"$cross_symbols" || true)"
cross_out="$(qemu-aarch64-static -L /usr/aarch64-linux-gnu "$cross_app")"
echo "$cross_out"
check "consumer: the aarch64 app's results under qemu-aarch64" "2" "$(grep -c ': ok$' <<<"$cross_out")"
check "consumer: the aarch64 app takes an aarch64-sve256 variant" "1" \
  "$(grep -c 'on aarch64-sve256: taken$' <<<"$cross_out")"

[[ $fail -eq 0 ]] && echo "bazel: all checks passed"
exit $fail
