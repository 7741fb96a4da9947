#!/usr/bin/env bash
# Builds kiln's libFuzzer targets (the fuzz preset: clang 16, ASan + UBSan) and runs each for a
# bounded time, or replays each one's checked-in corpus once. Fails on any crash, leak, undefined
# behaviour, hang (-timeout per input), memory blow-up (-rss_limit_mb) or finding of the target's
# own (tests/fuzz/fuzz.h), and prints per target:
#   fuzz <target>: <seconds> s, <executions> executions, 0 crashes
#
#   scripts/fuzz.sh                      every target, 20 s each (CI: --jobs 2, two at a time)
#   scripts/fuzz.sh --seconds 600 spec   the spec front end for 10 minutes
#   scripts/fuzz.sh --replay             every corpus file once per target (ctest's fuzz_corpus_*)
#
# Targets: spec (kiln check), simplify (the IR text parser), manifest (kiln size and gen's
# manifest readers), tune_db (the tuning database), tune_opts (its opts as kiln gen applies them),
# explain (explain's dim list). Inputs found in a run are kept in <build dir>/fuzz-work/<target>/corpus
# (never in the tree); an input that fails is saved in <build dir>/fuzz-work/<target>/ and named in
# the message: fix the defect, then copy the input into tests/fuzz/corpus/<target>/ (named
# regress-<what>) so every replay runs it.
# Environment: KILN_FUZZ_TIMEOUT (seconds per input, 10), KILN_FUZZ_RSS_MB (2048), KILN_FUZZ_JOBS
# (build jobs, 2).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds=20
jobs=1
build_dir=build/fuzz
replay=0
build=1
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    --replay) replay=1; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 1 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all_targets=(spec simplify manifest tune_db tune_opts explain)
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ -f "tests/fuzz/fuzz_$t.cpp" ]] ||
    { echo "fuzz.sh: no target '$t' (expected one of ${all_targets[*]})" >&2; exit 1; }
done

if [[ $replay == 0 && $build == 1 ]]; then
  KILN_EXTRA_PACKAGES="clang-16 libclang-rt-16-dev ${KILN_EXTRA_PACKAGES:-}" source scripts/deps.sh
  [[ -f "$build_dir/CMakeCache.txt" ]] || cmake --preset fuzz -B "$build_dir" >/dev/null
  cmake --build "$build_dir" -j "${KILN_FUZZ_JOBS:-2}" --target "${targets[@]/#/kiln_fuzz_}"
fi

timeout_s="${KILN_FUZZ_TIMEOUT:-10}"
rss_mb="${KILN_FUZZ_RSS_MB:-2048}"
# LLVM 19's symbolizer: Debian's default llvm-symbolizer (14) names no function in clang 16's DWARF 5
symbolizer=$(command -v llvm-symbolizer-19 || command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)
symbolize="${symbolizer:+:external_symbolizer_path=$symbolizer}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1$symbolize}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1$symbolize}"
# one target: its line on stdout, and on failure the tail of its log and the input it saved
run_target() {
  local t="$1" bin="$build_dir/fuzz/kiln_fuzz_$1" work="$build_dir/fuzz-work/$1" seeds="tests/fuzz/corpus/$1"
  local log="$work/log.txt" rc=0 dict=() d="tests/fuzz/${1/tune_opts/tune_db}.dict"  # tune_opts reads the database too
  [[ $replay == 1 ]] && log="$work/replay.txt"
  mkdir -p "$work/corpus"
  [[ -f "$d" ]] && dict=("-dict=$d")
  local common=(-timeout="$timeout_s" -rss_limit_mb="$rss_mb" -malloc_limit_mb="$rss_mb" -artifact_prefix="$work/"
                -print_final_stats=1)
  if [[ $replay == 1 ]]; then
    local files=("$seeds"/*) runs
    "$bin" "${common[@]}" "${files[@]}" >"$log" 2>&1 || rc=$?
    runs=$(grep -c '^Executed ' "$log" || true)
    if [[ $rc -eq 0 && $runs -eq ${#files[@]} ]]; then
      echo "fuzz $t: replayed $runs inputs of $seeds, 0 crashes"
      return 0
    fi
  else
    local execs took
    "$bin" "${common[@]}" "${dict[@]}" -max_len=8192 -max_total_time="$seconds" "$work/corpus" "$seeds" \
      >"$log" 2>&1 || rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
    took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n1)
    if [[ $rc -eq 0 && -n "$execs" ]]; then
      local kept
      kept=$(find "$work/corpus" -type f | wc -l)
      echo "fuzz $t: ${took:-$seconds} s, $execs executions, 0 crashes ($kept inputs in $work/corpus)"
      return 0
    fi
  fi
  tail -n 60 "$log"
  local artifact
  artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n1)
  echo "fuzz $t: FAILED (exit $rc): 1 crash${artifact:+, the input is $artifact}; the whole log: $log"
  return 1
}

for t in "${targets[@]}"; do
  [[ -x "$build_dir/fuzz/kiln_fuzz_$t" ]] ||
    { echo "fuzz.sh: $build_dir/fuzz/kiln_fuzz_$t is not built (cmake --build $build_dir --target kiln_fuzz)" >&2
      exit 1; }
done
# --jobs targets at once, each its summary in a file; printed in the targets' order
mkdir -p "$build_dir/fuzz-work"
for t in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n || true; done
  rm -f "$build_dir/fuzz-work/$t.rc"
  { run_target "$t" && echo 0 >"$build_dir/fuzz-work/$t.rc" || echo 1 >"$build_dir/fuzz-work/$t.rc"; } \
    >"$build_dir/fuzz-work/$t.summary" 2>&1 &
done
wait
failed=()
for t in "${targets[@]}"; do
  cat "$build_dir/fuzz-work/$t.summary"
  [[ "$(cat "$build_dir/fuzz-work/$t.rc" 2>/dev/null)" == 0 ]] || failed+=("$t")
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: failed: ${failed[*]}"
  exit 1
fi
