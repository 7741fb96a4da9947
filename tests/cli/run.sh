#!/usr/bin/env bash
# CLI tests: drive `kiln simplify`, `kiln check`, `kiln codegen`, `kiln gen` and `kiln size` exactly as
# users and acceptance checks do (argv, stdin, stdout, stderr, exit code). Usage: run.sh <path to kiln>
set -uo pipefail
kiln="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/check.sh"

# golden: every line of simplify.in gives the line of simplify.expected
"$kiln" simplify "$here/simplify.in" >"$tmp/out" 2>"$tmp/err"
check "golden exit code" 0 "$?"
check "golden stdout" "$(cat "$here/simplify.expected")" "$(cat "$tmp/out")"
check "golden stderr empty" "" "$(cat "$tmp/err")"

# stdin works the same as a file, and '-' means stdin
check "stdin" "$(cat "$here/simplify.expected")" "$("$kiln" simplify <"$here/simplify.in" 2>/dev/null)"
check "dash" "$(cat "$here/simplify.expected")" "$("$kiln" simplify - <"$here/simplify.in" 2>/dev/null)"

# malformed lines: reported with their line number, the other lines still processed, exit 1
printf '%s\n' '(ADD:weakint (VAR:weakint a 0 3) (CONST:weakint 0))' \
  '(ADD:weakint (CONST:weakint 1)' \
  '(FOO:weakint (CONST:weakint 1))' \
  '' \
  '(CONST:wat 1)' \
  '(VAR:weakint a 9 1)' \
  '(MUL:weakint (CONST:weakint 6) (CONST:weakint 7))' \
  '(FLOORDIV:weakint (VAR:weakint a 0 7) (CONST:weakint 0))' >"$tmp/bad.in"
"$kiln" simplify "$tmp/bad.in" >"$tmp/out" 2>"$tmp/err"
check "bad exit code" 1 "$?"
check "bad stdout" "$(printf '%s\n' '(VAR:weakint a 0 3) [0, 3]' '(CONST:weakint 42) [42, 42]')" "$(cat "$tmp/out")"
check "bad stderr" "$(printf '%s\n' \
  "line 2: error: unexpected end of input, expected ')' (column 31)" \
  "line 3: error: unknown op 'FOO' (column 2)" \
  "line 5: error: unknown dtype 'wat' (column 8)" \
  "line 6: error: VAR range is empty: min 9 > max 1 (column 16)" \
  "line 8: error: division by zero in (FLOORDIV:weakint (VAR:weakint a 0 7) (CONST:weakint 0))")" "$(cat "$tmp/err")"

# ill-typed lines are refused by the verifier, with the line and the column of the bad node
printf '%s\n' '(ADD:int (CONST:float 1.5) (CONST:int 2))' \
  '(AND:bool (CONST:int 5) (CMPLT:bool (VAR:weakint a 0 3) (CONST:weakint 1)))' \
  '(MUL:weakint (VAR:weakint a 0 3) (ADD:int (CONST:int 1) (CONST:long 2)))' \
  '(ADD:int (VAR:int i 0 3) (CONST:weakint 1))' >"$tmp/typed.in"
"$kiln" simplify "$tmp/typed.in" >"$tmp/out" 2>"$tmp/err"
check "ill-typed exit code" 1 "$?"
check "ill-typed stdout" '(ADD:int (VAR:int i 0 3) (CONST:weakint 1)) [1, 4]' "$(cat "$tmp/out")"
check "ill-typed stderr" "$(printf '%s\n' \
  "line 1: error: ADD: operand of dtype float in a int op (column 2)" \
  "line 2: error: AND: operand of dtype int in a bool op (column 2)" \
  "line 3: error: ADD: operand of dtype long in a int op (column 35)")" "$(cat "$tmp/err")"

# a missing file is an error, not a crash; a directory is no input and a device no endless one
"$kiln" simplify "$tmp/does-not-exist" >/dev/null 2>"$tmp/err"
check "missing file exit code" 1 "$?"
check "missing file message" "$tmp/does-not-exist: error: cannot open (No such file or directory)" "$(cat "$tmp/err")"
mkdir "$tmp/dir.kiln"
for cmd in check codegen simplify; do
  "$kiln" "$cmd" "$tmp/dir.kiln" >"$tmp/out" 2>"$tmp/err"
  check "$cmd of a directory" "1  $tmp/dir.kiln: error: is a directory, not a file" \
    "$? $(cat "$tmp/out") $(cat "$tmp/err")"
done
"$kiln" gen --name lib --out "$tmp/dir-lib" --target cpu "$tmp/dir.kiln" 2>"$tmp/err"
check "gen of a directory" "1 $tmp/dir.kiln: error: is a directory, not a file no library" \
  "$? $(cat "$tmp/err") $([[ -e "$tmp/dir-lib" ]] || echo no library)"
timeout 60 "$kiln" check /dev/zero >/dev/null 2>"$tmp/err"
check "check /dev/zero" "1 /dev/zero: error: is larger than 16 MiB, the most kiln reads from an input file" \
  "$? $(cat "$tmp/err")"
timeout 60 "$kiln" simplify </dev/zero >/dev/null 2>"$tmp/err"
check "simplify </dev/zero" \
  "1 line 1: error: longer than 16 MiB, the most kiln reads of one line (the rest of the input is not read)" \
  "$? $(cat "$tmp/err")"

# usage errors exit 1 (as every user error does) with a message
"$kiln" >/dev/null 2>"$tmp/err"
check "no subcommand" "1 A subcommand is required" "$? $(head -1 "$tmp/err")"
"$kiln" check --bogus "$here/specs/ok.kiln" >/dev/null 2>"$tmp/err"
check "unknown option" "1 The following argument was not expected: --bogus" "$? $(head -1 "$tmp/err")"
"$kiln" --help >"$tmp/out" 2>&1
check "help exit code" 0 "$?"
check "help names simplify" 1 "$(grep -c 'simplify' "$tmp/out" | awk '{print ($1 > 0)}')"
# the version: the one runtime/include/kiln/version.h states (CMake's project version is read from it)
"$kiln" --version >"$tmp/out" 2>&1
check "version" "0 kiln $(sed -n 's/^#define KILN_VERSION "\(.*\)"$/\1/p' "$here/../../runtime/include/kiln/version.h")" \
  "$? $(cat "$tmp/out")"
check "version is 0.1.0" "kiln 0.1.0" "$(cat "$tmp/out")"

# the target table: for people, and as JSON with one object per target line
"$kiln" targets >"$tmp/out" 2>"$tmp/err"
check "targets exit code" 0 "$?"
check "targets names" "aarch64-neon aarch64-sve256 armv7-neon cortex-m4 cpu cuda-sm80 cuda-sm90 opencl riscv64-rvv wasm32-simd128 x86_64-avx2 x86_64-avx512" "$(tail -n +2 "$tmp/out" | awk '{print $1}' | sort | xargs)"
"$kiln" targets --json >"$tmp/json" 2>"$tmp/err"
check "targets --json exit code" 0 "$?"
check "targets --json names" "$(tail -n +2 "$tmp/out" | awk '{print $1}' | xargs)" \
  "$(python3 -c 'import json,sys; print(" ".join(t["name"] for t in json.load(open(sys.argv[1]))))' "$tmp/json")"
"$kiln" gen --name x --out "$tmp/gen-bad" --target avx9 "$here/specs/ok.kiln" >/dev/null 2>"$tmp/err"
check "unknown target lists the known" "1 kiln: error: unknown target 'avx9' (known: aarch64-neon, aarch64-sve256, armv7-neon, cortex-m4, cpu, cuda-sm80, cuda-sm90, opencl, riscv64-rvv, wasm32-simd128, x86_64-avx2, x86_64-avx512)" \
  "$? $(cat "$tmp/err")"
check "targets --json: opencl is a GPU target with grid limits" "opencl True [2147483647, 65535, 65535] .cl" \
  "$(python3 -c 'import json,sys; t=[t for t in json.load(open(sys.argv[1])) if t["gpu"]][0]; print(t["name"], t["gpu"], t["global_max"], t["extension"])' "$tmp/json")"
# the GPU target: kiln gen writes its kernels as a .cl file the dispatch embeds; codegen prints them
"$kiln" gen --name x --out "$tmp/gen-ocl" --target cpu,opencl "$here/specs/ok.kiln" >/dev/null 2>"$tmp/err"
check "gen writes opencl" "0 " "$? $(cat "$tmp/err")"
check "gen's .cl has the kernels of every variant" "yes yes" \
  "$([ "$(grep -c '^__kernel void ' "$tmp/gen-ocl/x_ok_opencl.cl")" -ge "$(grep -c '^void .*_cpu(' "$tmp/gen-ocl/x_ok_cpu.c")" ] && echo yes) $(grep -q 'const char\* const kProgram_opencl\[\] = {' "$tmp/gen-ocl/x_ok_dispatch.cpp" && echo yes)"
"$kiln" tune --name x --target opencl --db "$tmp/ocl.tunedb" "$here/specs/ok.kiln" >/dev/null 2>"$tmp/err"
check "tune refuses opencl" "1 kiln: error: kiln tune times CPU targets; tuning opencl is not built yet" "$? $(cat "$tmp/err")"
"$kiln" codegen --target opencl "$here/specs/ok.kiln" >"$tmp/k.cl" 2>"$tmp/err"
check "codegen --target opencl" "0 " "$? $(cat "$tmp/err")"
check "codegen --target opencl kernels" "$("$kiln" check "$here/specs/ok.kiln" | awk '{ n += $2 } END { print n }')" \
  "$(grep -c '^__kernel void ' "$tmp/k.cl")"
# gemm's generic variant: M and N padded to 64, each work item a 4 x 4 tile, 16 x 16 items a group
check "codegen --target opencl gemm's launch and ids" "1 1 1" \
  "$(grep -c '^/\* launch: work groups ((N + 63) / 64, (M + 63) / 64, 1) of (16, 16, 1)' "$tmp/k.cl") $(grep -c 'get_local_id(1)' <(sed -n '/gemm_0/,/^}/p' "$tmp/k.cl")) $(grep -c '__global const float\* restrict data1' <(sed -n '/gemm_0(/p' "$tmp/k.cl"))"
# the CUDA targets: codegen prints CUDA C++ (gemm's blocks of 16 x 16 threads, the padded rows'
# stores gated); kiln gen compiles them with nvcc, and names the nvcc it could not run
"$kiln" codegen --target cuda-sm80 "$here/specs/ok.kiln" >"$tmp/k.cu" 2>"$tmp/err"
check "codegen --target cuda-sm80" "0 " "$? $(cat "$tmp/err")"
check "codegen --target cuda-sm80 kernels" "$(grep -c '^__kernel void ' "$tmp/k.cl")" "$(grep -c '^extern "C" __global__ void ' "$tmp/k.cu")"
check "codegen --target cuda-sm80 gemm's ids and gated stores" "1 16" \
  "$(grep -c 'lidx1 = (int32_t)threadIdx.y;' <(sed -n '/gemm_0(/,/^}/p' "$tmp/k.cu")) $(grep -c '^  if ((alu[0-9]* & alu[0-9]*)) data0\[' <(sed -n '/gemm_0(/,/^}/p' "$tmp/k.cu"))"
"$kiln" gen --name x --out "$tmp/gen-cuda" --target cpu,cuda-sm90 --nvcc /nonexistent/nvcc "$here/specs/ok.kiln" >/dev/null 2>"$tmp/err"
check "gen names the missing nvcc" "1 kiln: error: target 'cuda-sm90': kiln gen compiles its kernels with the CUDA toolkit's nvcc, and --nvcc /nonexistent/nvcc is not an executable" \
  "$? $(cat "$tmp/err")"
if nvcc="$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)"; then
  "$kiln" gen --name x --out "$tmp/gen-cuda" --target cpu,cuda-sm90 --nvcc "$nvcc" "$here/specs/ok.kiln" >/dev/null 2>"$tmp/err"
  check "gen cuda-sm90 with nvcc" "0 1 1" \
    "$? $(ls "$tmp/gen-cuda" | grep -c '_cuda_sm90[.]cu$') $(grep -c 'const unsigned char kFatbin_cuda_sm90\[\] = ' "$tmp"/gen-cuda/*_dispatch.cpp | awk -F: '{ n += $NF } END { print (n > 0) }')"
fi
"$kiln" codegen --target opencl "$here/specs/ok.kiln" --kernel gemm --dump-after "gpu dims" >"$tmp/out" 2>&1
check "codegen --target opencl --dump-after 'gpu dims' shows the ids" "4" "$(grep -c 'SPECIAL:weakint [gl]idx[01] ' "$tmp/out")"

# determinism: the same input gives the same bytes
a="$("$kiln" simplify "$here/simplify.in")"
b="$("$kiln" simplify "$here/simplify.in")"
check "deterministic" "$a" "$b"

# kiln check: a valid spec prints one line per kernel, with the number of kernels it is scheduled into
"$kiln" check "$here/specs/ok.kiln" >"$tmp/out" 2>"$tmp/err"
check "check ok exit code" 0 "$?"
check "check ok stdout" "$(printf '%s\n' 'gemm: 1 kernels' 'mlp: 3 kernels')" "$(cat "$tmp/out")"
check "check ok stderr empty" "" "$(cat "$tmp/err")"
"$kiln" check "$here/../../kernels/examples.kiln" >/dev/null 2>"$tmp/err"
check "check kernels/examples.kiln" "0 " "$? $(cat "$tmp/err")"

# kiln check: syntax errors, then check errors, each with file:line:col, the line and a caret
bad="$here/specs/bad.kiln"
"$kiln" check "$bad" >"$tmp/out" 2>"$tmp/err"
check "check bad exit code" 1 "$?"
check "check bad stdout empty" "" "$(cat "$tmp/out")"
check "check bad stderr" "$(printf '%s\n' \
  "$bad:6:13: error: unexpected character '\$'" \
  '  C = A @ B $' \
  '            ^' \
  "$bad:10:19: error: syntax error in expression (expected an expression, got ',')" \
  '  y = softmax(x @ , axis=-1)' \
  '                  ^')" "$(cat "$tmp/err")"
bad="$here/specs/bad_check.kiln"
"$kiln" check "$here/specs/ok.kiln" "$bad" >"$tmp/out" 2>"$tmp/err"
check "check bad_check exit code" 1 "$?"
check "check bad_check stdout has the good file" "$(printf '%s\n' 'gemm: 1 kernels' 'mlp: 3 kernels')" "$(cat "$tmp/out")"
check "check bad_check stderr" "$(printf '%s\n' \
  "$bad:2:10: error: range of dim 'N' is empty: its minimum is above its maximum (expected min <= max, got 4..1)" \
  'dim N in 4..1' \
  '         ^~~~' \
  "$bad:4:23: error: unknown dim 'K' in the shape of 'A' (expected a declared dim or an integer, got 'K')" \
  'kernel gemm(A: f32[M, K], B: f3[K, M]) -> (C: f32[M, M]) {' \
  '                      ^' \
  "$bad:4:30: error: unknown dtype (expected one of bool, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, got 'f3')" \
  'kernel gemm(A: f32[M, K], B: f3[K, M]) -> (C: f32[M, M]) {' \
  '                             ^~' \
  "$bad:4:33: error: unknown dim 'K' in the shape of 'B' (expected a declared dim or an integer, got 'K')" \
  'kernel gemm(A: f32[M, K], B: f3[K, M]) -> (C: f32[M, M]) {' \
  '                                ^' \
  "$bad:4:44: error: output 'C' of kernel 'gemm' is never assigned" \
  'kernel gemm(A: f32[M, K], B: f3[K, M]) -> (C: f32[M, M]) {' \
  '                                           ^')" "$(cat "$tmp/err")"

# kiln check: a missing file, no file at all, and the help that states the output
"$kiln" check "$tmp/does-not-exist.kiln" >/dev/null 2>"$tmp/err"
check "check missing file exit code" 1 "$?"
check "check missing file message" "$tmp/does-not-exist.kiln: error: cannot open (No such file or directory)" \
  "$(cat "$tmp/err")"
"$kiln" check >/dev/null 2>&1
check "check without specs fails" 1 "$?"
"$kiln" check --help >"$tmp/out" 2>&1
check "check help states the output" 1 "$(grep -c "'<kernel>: <N> kernels'" "$tmp/out")"
a="$("$kiln" check "$bad" 2>&1)"
b="$("$kiln" check "$bad" 2>&1)"
check "check deterministic" "$a" "$b"

# kiln check: lowering to tensors reports shape errors at the operator, with both shapes
bad="$here/specs/bad_shape.kiln"
"$kiln" check "$bad" >"$tmp/out" 2>"$tmp/err"
check "check bad_shape exit code" 1 "$?"
check "check bad_shape stdout empty" "" "$(cat "$tmp/out")"
check "check bad_shape stderr" "$(printf '%s\n' \
  "$bad:6:9: error: matmul: expected the inner dims to match, got [M, K] @ [N, K]" \
  '  C = A @ B' \
  '        ^')" "$(cat "$tmp/err")"

# deep specs get a diagnostic, never a stack overflow: chains of methods and operators deeper than
# 500, and chains of locals deeper than the scheduler's 20000 (the 10000 below it still compile)
deep() {  # name, a Python expression for the statements of kernel k(x) -> (y) over dim M
  python3 -c 'import sys; print("dim M in 1..64\nkernel k(x: f32[M]) -> (y: f32[M]) {\n" + eval(sys.argv[1]) + "\n}")' \
    "$2" >"$tmp/$1.kiln"
}
deep_check() {  # name, subcommand, expected exit code, expected first line of stderr (after the directory)
  local out=()
  [[ "$2" == codegen ]] && out=(-o /dev/null)
  "$kiln" "$2" "$tmp/$1.kiln" "${out[@]}" >/dev/null 2>"$tmp/err"
  check "deep $1 $2 exit code" "$3" "$?"
  # under ASan an exception thrown this deep (a 170 MB stack) also prints a warning that it cannot
  # unpoison so much stack (google/sanitizers#189): not kiln's output
  check "deep $1 $2 message" "$4" "$(grep -v -e '^==[0-9]*==WARNING: ASan is ignoring requested __asan_handle_no_return' \
    -e '^False positive error reports may follow' -e '^For details see .*sanitizers/issues/189' "$tmp/err" |
    head -n 1 | sed "s|^$tmp/||")"
}
chain='lambda n: "\n".join(["  t0 = x"] + [f"  t{i} = t{i-1} + x" for i in range(1, n + 1)] + [f"  y = t{n}"])'
deep methods '"  y = x" + ".exp()" * 5000'
deep relus '"  y = x" + ".relu()" * 1000000'
deep sum '"  y = x" + " + x" * 10000'
deep relus500 '"  y = x" + ".relu()" * 499'
deep locals "($chain)(10000)"
deep locals30k "($chain)(30000)"
for sub in check codegen; do
  deep_check methods "$sub" 1 "methods.kiln:3:30003: error: expression too deep (expected at most 500 nested operations, got 5001)"
  deep_check relus "$sub" 1 "relus.kiln:3:7000002: error: expression too deep (expected at most 500 nested operations, got 1000001)"
  deep_check sum "$sub" 1 "sum.kiln:3:40005: error: expression too deep (expected at most 500 nested operations, got 10001)"
  deep_check relus500 "$sub" 0 ""
  deep_check locals "$sub" 0 ""
  deep_check locals30k "$sub" 1 "locals30k.kiln:2:8: error: cannot schedule kernel 'k': the tensor program is too deep to schedule (more than 20000 nested ops)"
done

# kiln codegen: C for every scheduled kernel, warning-free under -Wall -Wextra -Werror, deterministic
specs=("$here/../../kernels/examples.kiln" "$here/../../kernels/nn.kiln")
"$kiln" codegen "${specs[@]}" >"$tmp/k.c" 2>"$tmp/err"
check "codegen exit code" 0 "$?"
check "codegen stderr empty" "" "$(cat "$tmp/err")"
# one function per scheduled kernel: as many as `kiln check` counts
check "codegen kernels" "$("$kiln" check "${specs[@]}" | awk '{ n += $2 } END { print n }')" \
  "$(grep -c '^void [a-z_]*_[0-9]*(void\* const\* bufs, const int64_t\* vars, int32_t core, int32_t cores) {$' "$tmp/k.c")"
${CC:-cc} -std=c99 -O1 -Wall -Wextra -Werror -c "$tmp/k.c" -o "$tmp/k.o" 2>"$tmp/err"
check "codegen C compiles cleanly" "0 " "$? $(head -5 "$tmp/err")"
check "codegen deterministic" "$(cat "$tmp/k.c")" "$("$kiln" codegen "${specs[@]}" 2>&1)"
"$kiln" codegen "$here/specs/ok.kiln" --kernel gemm --dump-after "remove reduces" >"$tmp/out" 2>&1
check "codegen dump-after header" "// ---- gemm_0 after remove reduces" "$(head -1 "$tmp/out")"
# the cpu target's tile (16 registers of 16 bytes) of 6 rows of 8 lanes over the largest multiples
# of 6 in M and 8 in N (accumulators for its blocks of K and for its last K % 64 steps), then the
# cleanup nests of the last N % 8 columns (4 in lanes, the rest one at a time) and of the last M % 6
# rows, each with accumulators of its own
check "codegen dump-after has the accumulators" 41 "$(grep -c 'BUFFER:float\*reg' "$tmp/out")"
check "codegen dump-all dumps every stage" 24 "$("$kiln" codegen "$here/specs/ok.kiln" --kernel gemm --dump-all | grep -c '^// ---- gemm_0 after ')"
"$kiln" codegen "$here/specs/ok.kiln" --dump-after nonsense >/dev/null 2>"$tmp/err"
check "codegen unknown stage" "1 kiln: error: unknown stage 'nonsense' (expected one of kernel ast, early movement ops, split ranges, initial symbolic, load collapse, simplify ranges, apply opts, expander, post-opt symbolic, add loads, remove reduces, local buffers, gpu dims, split ends, lower index dtype, final symbolic, decompositions, move gates, renderer rules, commit weak, implicit barriers, vectorize, devectorize, linearize)" "$? $(cat "$tmp/err")"
"$kiln" codegen "$here/specs/ok.kiln" --kernel nope >/dev/null 2>"$tmp/err"
check "codegen unknown kernel" "1 kiln: error: no kernel named 'nope'" "$? $(cat "$tmp/err")"
"$kiln" codegen "$here/specs/bad_shape.kiln" >"$tmp/out" 2>"$tmp/err"
check "codegen bad spec" "1 0" "$? $(wc -c <"$tmp/out")"

# -o into a device writes into it: kiln never replaces /dev/null with a file (as root it could)
"$kiln" codegen "$here/specs/ok.kiln" -o /dev/null 2>"$tmp/err"
check "codegen -o /dev/null" "0 1" "$? $([[ -c /dev/null ]] && echo 1)"

# kiln codegen --target: an object target's kernels through LLVM, as IR, assembly or the object
"$kiln" codegen --target x86_64-avx512 --emit-llvm "${specs[@]}" >"$tmp/k.ll" 2>"$tmp/err"
check "codegen --emit-llvm" "0 " "$? $(cat "$tmp/err")"
check "codegen --emit-llvm kernels" "$("$kiln" check "${specs[@]}" | awk '{ n += $2 } END { print n }')" \
  "$(grep -c '^define void @[a-z_]*_[0-9]*(ptr noalias nocapture noundef readonly %bufs, ptr noalias nocapture noundef readonly %vars, i32 noundef %core, i32 noundef %cores) #0 {$' "$tmp/k.ll")"
check "codegen --emit-llvm one module per spec" "2 examples nn" \
  "$(grep -c '^target triple = "x86_64-unknown-linux-gnu"$' "$tmp/k.ll") $(sed -n 's/^source_filename = "\(.*\)"$/\1/p' "$tmp/k.ll" | tr '\n' ' ' | sed 's/ $//')"
check "codegen --emit-llvm 512-bit vectors" 2 "$(grep -c '"target-cpu"="skylake-avx512".*"prefer-vector-width"="512"' "$tmp/k.ll")"
check "codegen --emit-llvm deterministic" "$(cat "$tmp/k.ll")" "$("$kiln" codegen --target x86_64-avx512 --emit-llvm "${specs[@]}" 2>&1)"
"$kiln" codegen --target x86_64-avx512 --asm "$here/specs/ok.kiln" --kernel gemm >"$tmp/k.s" 2>"$tmp/err"
check "codegen --asm" "0 1 1" "$? $(grep -c '^gemm_0:$' "$tmp/k.s") $(grep -q zmm "$tmp/k.s" && echo 1)"
# aarch64-sve256: kiln's 8-lane vectors as SVE under a predicate (fmla on z registers), not NEON pairs
"$kiln" codegen --target aarch64-sve256 --asm "$here/specs/ok.kiln" --kernel gemm >"$tmp/k.s" 2>"$tmp/err"
check "codegen --asm aarch64-sve256" "0 1 1" \
  "$? $(grep -qE 'ptrue\s+p[0-9]+\.s, vl8' "$tmp/k.s" && echo 1) $(grep -qE 'fml[as]\s+z[0-9]+\.s' "$tmp/k.s" && echo 1)"
"$kiln" codegen --target x86_64-avx2 "${specs[1]}" -o "$tmp/k.o" 2>"$tmp/err"
check "codegen --target -o writes the object" "0 " "$? $(cat "$tmp/err")"
${CC:-cc} -shared "$tmp/k.o" -o "$tmp/k.so" -lm 2>"$tmp/err"
check "codegen object links" "0 " "$? $(head -5 "$tmp/err")"
# every kernel of the spec is in it, defined once
check "codegen object has the kernels" "$("$kiln" check "${specs[1]}" | awk '{ n += $2 } END { print n }')" \
  "$(nm "$tmp/k.so" | grep -c ' T [a-z_]*_[0-9]*$')"
"$kiln" codegen --target x86_64-avx2 "${specs[1]}" -o "$tmp/k2.o"
check "codegen object deterministic" "0" "$(cmp -s "$tmp/k.o" "$tmp/k2.o"; echo $?)"
"$kiln" codegen --target x86_64-avx2 "${specs[@]}" -o "$tmp/k3.o" 2>"$tmp/err"
check "codegen object of two specs" "1 kiln: error: an object holds the kernels of one spec file (got 2)" \
  "$? $(cat "$tmp/err")"
check "codegen --target cpu is the C" "$(cat "$tmp/k.c")" "$("$kiln" codegen --target cpu "${specs[@]}" 2>&1)"
"$kiln" codegen --target nope "$here/specs/ok.kiln" >/dev/null 2>"$tmp/err"
check "codegen unknown target" "1 kiln: error: unknown target 'nope' (expected one of aarch64-neon, aarch64-sve256, armv7-neon, cortex-m4, cpu, cuda-sm80, cuda-sm90, opencl, riscv64-rvv, wasm32-simd128, x86_64-avx2, x86_64-avx512)" \
  "$? $(cat "$tmp/err")"
"$kiln" codegen --asm "$here/specs/ok.kiln" >/dev/null 2>"$tmp/err"
check "codegen --asm without a target" \
  "1 kiln: error: --asm and --emit-llvm need an object target (--target; kiln targets lists them)" "$? $(cat "$tmp/err")"
"$kiln" codegen --target cpu --emit-llvm "$here/specs/ok.kiln" >/dev/null 2>"$tmp/err"
check "codegen --emit-llvm for a C target" \
  "1 kiln: error: --asm and --emit-llvm need an object target (--target cpu writes C)" "$? $(cat "$tmp/err")"
"$kiln" codegen --target x86_64-avx2 "$here/specs/ok.kiln" >"$tmp/out" 2>"$tmp/err"
check "codegen object to a terminal" \
  "1 0 kiln: error: an object is binary: write it with -o FILE, or print --asm or --emit-llvm" \
  "$? $(wc -c <"$tmp/out") $(cat "$tmp/err")"
"$kiln" codegen --target x86_64-avx2 --asm --emit-llvm "$here/specs/ok.kiln" >/dev/null 2>"$tmp/err"
check "codegen --asm with --emit-llvm" "1 kiln: error: --asm and --emit-llvm exclude each other" "$? $(cat "$tmp/err")"

# kiln gen: targets listed with spaces end at the first spec; the split runs (--emit) write the
# bytes of one run, manifests included (only the library's has sizes: --emit library measures the
# objects --emit kernels wrote, and --emit spec compiles nothing)
cp "$here/specs/ok.kiln" "$tmp/one.kiln"
printf 'dim S in 1..64\nkernel twice(x: f32[S]) -> (y: f32[S]) {\n  y = x * 2.0\n}\n' >"$tmp/two-b.kiln"
"$kiln" gen --name lib --out "$tmp/all" --target cpu x86_64-avx2 "$tmp/one.kiln" "$tmp/two-b.kiln" 2>"$tmp/err"
check "gen with a target list" "0 " "$? $(cat "$tmp/err")"
check "gen files" "lib.d lib.h lib.manifest.json lib_one.h lib_one.manifest.json lib_one_cpu.c lib_one_dispatch.cpp lib_one_x86_64_avx2.o lib_two_b.h lib_two_b.manifest.json lib_two_b_cpu.c lib_two_b_dispatch.cpp lib_two_b_x86_64_avx2.o" "$(ls "$tmp/all" | tr '\n' ' ' | sed 's/ $//')"
for spec in one two-b; do
  "$kiln" gen --emit spec --name lib --out "$tmp/split" --target cpu,x86_64-avx2 "$tmp/$spec.kiln"
done
check "gen --emit spec: no kernel file" "lib_one.h lib_one.manifest.json lib_one_dispatch.cpp lib_two_b.h lib_two_b.manifest.json lib_two_b_dispatch.cpp" "$(ls "$tmp/split" | xargs)"
check "gen --emit spec: no sizes, nothing compiled" "" "$(grep -l '"code_bytes"\|"data_bytes"\|"sizes"' "$tmp/split"/*.manifest.json)"
mkdir "$tmp/parts" && cp "$tmp/split"/*.manifest.json "$tmp/parts"
"$kiln" gen --emit library --name lib --out "$tmp/parts" --target=cpu,x86_64-avx2 "$tmp/one.kiln" "$tmp/two-b.kiln" 2>"$tmp/err"
check "gen --emit library without the objects" "1 $tmp/parts/lib_one_x86_64_avx2.o: error: cannot open (No such file or directory) (kiln gen --emit kernels --target x86_64-avx2 $tmp/one.kiln writes it)" "$? $(cat "$tmp/err")"
check "gen --emit library without the objects writes nothing" "lib_one.manifest.json lib_two_b.manifest.json" "$(ls "$tmp/parts" | xargs)"
for spec in one two-b; do
  for t in cpu x86_64-avx2; do "$kiln" gen --emit=kernels --name lib --out "$tmp/split" --target "$t" "$tmp/$spec.kiln"; done
done
"$kiln" gen --emit library --name lib --out "$tmp/split" --target=cpu,x86_64-avx2 "$tmp/one.kiln" "$tmp/two-b.kiln"
check "gen --emit: the same bytes" "" "$(diff -r -x lib.d "$tmp/all" "$tmp/split" 2>&1)"
check "gen --emit: the library's manifest has the sizes" "1" "$(grep -c '"sizes": "measured in kiln.s object"' "$tmp/split/lib.manifest.json")"
"$kiln" gen --emit library --name lib --out "$tmp/parts" --kernels-dir "$tmp/split" --target=cpu,x86_64-avx2 "$tmp/one.kiln" "$tmp/two-b.kiln"
check "gen --emit library --kernels-dir" "" "$(cmp "$tmp/all/lib.manifest.json" "$tmp/parts/lib.manifest.json" 2>&1)"
head -c $(($(wc -c <"$tmp/split/lib_two_b_x86_64_avx2.o") / 2)) "$tmp/split/lib_two_b_x86_64_avx2.o" >"$tmp/parts/lib_two_b_x86_64_avx2.o"
cp "$tmp/split/lib_one_x86_64_avx2.o" "$tmp/parts"
"$kiln" gen --emit library --name lib --out "$tmp/parts" --target=cpu,x86_64-avx2 "$tmp/one.kiln" "$tmp/two-b.kiln" 2>"$tmp/err"
rc=$?
check "gen --emit library with a corrupt object" "1 yes" "$rc $([[ "$(cat "$tmp/err")" == "kiln: error: $tmp/parts/lib_two_b_x86_64_avx2.o: "?*" (kiln gen --emit kernels --target x86_64-avx2 $tmp/two-b.kiln writes it)" ]] && echo yes)"
cp "$tmp/split/lib_one_x86_64_avx2.o" "$tmp/parts/lib_two_b_x86_64_avx2.o"
"$kiln" gen --emit library --name lib --out "$tmp/parts" --target=cpu,x86_64-avx2 "$tmp/one.kiln" "$tmp/two-b.kiln" 2>"$tmp/err"
check "gen --emit library with another spec's object" "1 kiln: error: $tmp/parts/lib_two_b_x86_64_avx2.o has no function lib_twice_any_0_x86_64_avx2, which lib_two_b.manifest.json lists: not this spec's object, or an older one (kiln gen --emit kernels --target x86_64-avx2 $tmp/two-b.kiln writes it)" "$? $(cat "$tmp/err")"
"$kiln" gen --emit spec --kernels-dir "$tmp/split" --name lib --out "$tmp/parts" --target=cpu,x86_64-avx2 "$tmp/one.kiln" 2>"$tmp/err"
check "gen --kernels-dir without --emit library" "1 kiln: error: --kernels-dir is for --emit library (the run that reads the objects)" "$? $(cat "$tmp/err")"
# a spec dropped from the library, and a file an older kiln wrote: the files the last manifest listed
# and this run does not write are removed; others in the directory are left alone
touch "$tmp/all/lib_dispatch.cpp" "$tmp/all/mine.txt"
sed -i 's/"lib.h",/"lib.h", "lib_dispatch.cpp", "..\/x", "mine.txt\/",/' "$tmp/all/lib.manifest.json"
"$kiln" gen --name lib --out "$tmp/all" --target cpu,x86_64-avx2 "$tmp/one.kiln"
check "gen removes what it no longer writes" "lib.d lib.h lib.manifest.json lib_one.h lib_one.manifest.json lib_one_cpu.c lib_one_dispatch.cpp lib_one_x86_64_avx2.o mine.txt" "$(ls "$tmp/all" | tr '\n' ' ' | sed 's/ $//')"
# an object target's file an older kiln wrote as C is removed when the layout changes: the manifest
# listed lib_one_x86_64_avx2.c
touch "$tmp/all/lib_one_x86_64_avx2.c"
sed -i 's/"lib_one_x86_64_avx2.o",/"lib_one_x86_64_avx2.c",/' "$tmp/all/lib.manifest.json"
"$kiln" gen --name lib --out "$tmp/all" --target cpu,x86_64-avx2 "$tmp/one.kiln"
check "gen removes the C an object replaced" "" "$(ls "$tmp/all" | grep -x 'lib_one_x86_64_avx2.c')"
# --keep-ir: each object's LLVM IR beside it; the object the same bytes
cp "$tmp/all/lib_one_x86_64_avx2.o" "$tmp/obj-before"
"$kiln" gen --name lib --out "$tmp/all" --keep-ir --target cpu,x86_64-avx2 "$tmp/one.kiln"
check "gen --keep-ir writes the IR" "lib_one_x86_64_avx2.ll" "$(ls "$tmp/all" | grep '\.ll$' | xargs)"
check "gen --keep-ir: the IR is the object's module" "1" "$(grep -c '^target triple = "x86_64' "$tmp/all/lib_one_x86_64_avx2.ll")"
check "gen --keep-ir: the same object" "" "$(cmp "$tmp/obj-before" "$tmp/all/lib_one_x86_64_avx2.o" 2>&1)"
"$kiln" gen --name lib --out "$tmp/all" --target cpu,x86_64-avx2 "$tmp/one.kiln"
check "gen without --keep-ir removes the IR" "" "$(ls "$tmp/all" | grep '\.ll$')"
# --c-sources: every target's kernels as C, an object target's with its flags named and only on its
# architecture
"$kiln" gen --name lib --out "$tmp/csrc" --c-sources --target cpu,x86_64-avx2 "$tmp/one.kiln"
check "gen --c-sources: C for every target" "lib_one_cpu.c lib_one_x86_64_avx2.c" "$(ls "$tmp/csrc" | grep -E '_(cpu|x86_64_avx2)\.[co]$' | xargs)"
check "gen --c-sources: the target's flags" "1" "$(grep -c '^/\* compile with: -mavx2 -mfma \*/$' "$tmp/csrc/lib_one_x86_64_avx2.c")"
check "gen --c-sources: only on x86_64" "1" "$(grep -c '^#if defined(__x86_64__)$' "$tmp/csrc/lib_one_x86_64_avx2.c")"
check "gen --c-sources: the manifest says C" "c c" \
  "$(python3 -c 'import json,sys; print(" ".join(t["output"] for t in json.load(open(sys.argv[1]))["targets"]))' "$tmp/csrc/lib.manifest.json")"
"$kiln" gen --emit library --name lib --out "$tmp/none" --target cpu "$tmp/one.kiln" 2>"$tmp/err"
check "gen --emit library without parts" "1 $tmp/none/lib_one.manifest.json: error: cannot open (No such file or directory) (kiln gen --emit spec $tmp/one.kiln writes it)" "$? $(cat "$tmp/err")"

# a list option's empty item is an error, however it is spelled; so is a dim given twice
for t in "cpu," "" ",cpu" "cpu,,x86_64-avx2"; do
  "$kiln" gen --name lib --out "$tmp/empty" --target "$t" "$tmp/one.kiln" 2>"$tmp/err"
  check "gen --target '$t'" \
    "1 kiln: error: --target '$t' has an empty item (expected aarch64-neon, aarch64-sve256, armv7-neon, cortex-m4, cpu, cuda-sm80, cuda-sm90, opencl, riscv64-rvv, wasm32-simd128, x86_64-avx2, x86_64-avx512)" "$? $(cat "$tmp/err")"
done
"$kiln" explain --kernel gemm --dim M=1,N=2, --target cpu "$tmp/one.kiln" 2>"$tmp/err"
check "explain --dim with an empty item" "1 kiln: error: --dim 'M=1,N=2,' has an empty item (expected DIM=VALUE)" \
  "$? $(cat "$tmp/err")"
"$kiln" explain --kernel gemm --dim M=1,M=2,N=2,K=2 --target cpu "$tmp/one.kiln" 2>"$tmp/err"
check "explain --dim twice" "1 kiln: error: --dim M given twice (M=1 and M=2)" "$? $(cat "$tmp/err")"
"$kiln" explain --kernel gemm --dim M=1 --dim N=2,K=2 --target cpu "$tmp/one.kiln" >"$tmp/out" 2>"$tmp/err"
check "explain --dim repeated and listed" "0 gemm with M=1 N=2 K=2:" "$? $(head -1 "$tmp/out")"

# kiln size: per kernel, variant and target from the manifest (kiln gen measured its objects); a C
# target's sizes once compiled (its objects or the library archive); --budget; bad input is exit 1
"$kiln" gen --name lib --out "$tmp/size" --target cpu,x86_64-avx2 "$tmp/one.kiln" "$tmp/two-b.kiln"
"$kiln" size "$tmp/size/lib.manifest.json" >"$tmp/out" 2>"$tmp/err"
check "size exit code" "0 " "$? $(cat "$tmp/err")"
check "size header" "kernel variant target code data bytes" "$(head -1 "$tmp/out" | xargs)"
json_of() { python3 -c "import json,sys; m=json.load(open(sys.argv[1])); $2" "$1"; }
# one row per variant of the manifest, in its order: kernel, variant, target, code, data, code + data
check "size rows" "$(json_of "$tmp/size/lib.manifest.json" '
for k in m["kernels"]:
  for v in k["variants"]:
    c, d = v["code_bytes"], v["data_bytes"]
    print(k["name"], v["name"], v["target"], *(["?"] * 3 if c is None else [c, d, c + d]))')" \
  "$(grep -v '^total\|^kernel\|^?\|^all' "$tmp/out" | sed 's/  */ /g')"
check "size totals" "$(json_of "$tmp/size/lib.manifest.json" '
t = m["targets"]
print("total x86_64-avx2", t[0]["code_bytes"], t[0]["data_bytes"], t[0]["code_bytes"] + t[0]["data_bytes"])
print("total cpu ? ? ?")
print("total all", t[0]["code_bytes"], t[0]["data_bytes"], t[0]["code_bytes"] + t[0]["data_bytes"])')" \
  "$(grep '^total' "$tmp/out" | sed 's/  */ /g')"
check "size: cpu unknown until compiled" "?: unknown until compiled (cpu): give kiln size the compiled kernel objects or the library archive after the manifest" \
  "$(grep '^?:' "$tmp/out")"
"$kiln" size --json "$tmp/size/lib_one.manifest.json" >"$tmp/out.json"
check "size --json of a spec's manifest: no sizes" "lib False x86_64-avx2 unknown cpu unknown None" "$(json_of "$tmp/out.json" '
print(m["library"], m["total"]["complete"], *[x for t in m["targets"] for x in (t["name"], t["sizes"])], m["variants"][-1]["code_bytes"])')"
"$kiln" size --json "$tmp/size/lib_one.manifest.json" "$tmp/size/lib_one_x86_64_avx2.o" >"$tmp/out.json"
check "size --json of a spec's manifest and its object" "x86_64-avx2 known cpu not linked" "$(json_of "$tmp/out.json" '
print(*[x for t in m["targets"] for x in (t["name"], t["sizes"])])')"
# compiled: the C target measured in its object, the object target in kiln's; or both in an archive
for spec in one two_b; do
  cc -O2 -c -I"$here/../../runtime/include" "$tmp/size/lib_${spec}_cpu.c" -o "$tmp/size/$spec.o"
done
ar rcs "$tmp/size/liblib.a" "$tmp/size/one.o" "$tmp/size/two_b.o" "$tmp/size/lib_one_x86_64_avx2.o" "$tmp/size/lib_two_b_x86_64_avx2.o"
"$kiln" size --json "$tmp/size/lib.manifest.json" "$tmp/size/one.o" "$tmp/size/two_b.o" >"$tmp/out.json"
check "size of compiled C: cpu known, the object not given" "True not linked known" "$(json_of "$tmp/out.json" '
print(m["total"]["complete"], m["targets"][0]["sizes"], m["targets"][1]["sizes"])')"
"$kiln" size "$tmp/size/lib.manifest.json" "$tmp/size/one.o" >"$tmp/out"
check "size: not linked is '-'" "-: in none of the files given (not linked)" "$(grep '^-:' "$tmp/out")"
check "size: the spec not given is not linked" "twice twice[any] cpu - - -" "$(grep '^twice.*cpu' "$tmp/out" | sed 's/  */ /g')"
"$kiln" size --json "$tmp/size/lib.manifest.json" "$tmp/size/liblib.a" >"$tmp/ar.json"
check "size of the archive: every target known" "known known" "$(json_of "$tmp/ar.json" 'print(*[t["sizes"] for t in m["targets"]])')"
check "size of the archive: kiln's objects as the manifest says" \
  "$(json_of "$tmp/size/lib.manifest.json" 'print(m["targets"][0]["code_bytes"], m["targets"][0]["data_bytes"])')" \
  "$(json_of "$tmp/ar.json" 'print(m["targets"][0]["code_bytes"], m["targets"][0]["data_bytes"])')"
# the budget is per target: the larger one's total fits, one byte less and only it is over
read -r big big_bytes largest <<<"$(json_of "$tmp/ar.json" '
t = max((t["code_bytes"] + t["data_bytes"], t["name"]) for t in m["targets"])
print(t[1], t[0], max((v["code_bytes"] + v["data_bytes"], v["variant"]) for v in m["variants"] if v["target"] == t[1])[1])')"
"$kiln" size --budget "$big_bytes" "$tmp/size/lib.manifest.json" "$tmp/size/liblib.a" >"$tmp/out" 2>"$tmp/err"
check "size --budget: within" "0 within the budget" "$? $(grep -o 'within the budget' "$tmp/out")"
"$kiln" size --budget $((big_bytes - 1)) "$tmp/size/lib.manifest.json" "$tmp/size/liblib.a" >"$tmp/out" 2>"$tmp/err"
check "size --budget: over" "1 kiln: error: lib: the kernels of target $big take $big_bytes bytes" "$? $(head -1 "$tmp/err" | sed 's/ (code.*//')"
check "size --budget: only the target over it" "1" "$(grep -c '^kiln: error' "$tmp/err")"
check "size --budget: the largest variant first" "    $largest" "$(grep -A1 'its largest variants:' "$tmp/err" | tail -1 | sed 's/: .*//')"
"$kiln" size --budget 100000000 "$tmp/size/lib.manifest.json" 2>"$tmp/err"
check "size --budget: unknown sizes" "1 kiln: error: lib: the sizes of target cpu's kernels are unknown until compiled: give kiln size its compiled objects or the library archive" "$? $(cat "$tmp/err")"
# bad input: a clear error, exit 1, never a crash
"$kiln" size "$tmp/nothing.json" 2>"$tmp/err"
check "size: no manifest" "1 $tmp/nothing.json: error: cannot open (No such file or directory)" "$? $(cat "$tmp/err")"
"$kiln" size "$tmp/one.kiln" 2>"$tmp/err"
check "size: not a manifest" "1 kiln: error: $tmp/one.kiln is not a kiln manifest with sizes (not JSON; kiln gen writes <name>.manifest.json)" "$? $(cat "$tmp/err")"
printf '{"library": "lib", "targets": [], "kernels": [{"name": "k"}]}' >"$tmp/partial.json"
"$kiln" size "$tmp/partial.json" 2>"$tmp/err"
check "size: a manifest without variants" "1 kiln: error: $tmp/partial.json is not a kiln manifest with sizes" "$? $(sed 's/ (.*//' "$tmp/err")"
head -c 3000 "$tmp/size/one.o" >"$tmp/size/cut.o"
"$kiln" size "$tmp/size/lib.manifest.json" "$tmp/size/cut.o" 2>"$tmp/err"
rc=$?
check "size: a corrupt object" "1 yes" "$rc $([[ "$(cat "$tmp/err")" == "kiln: error: $tmp/size/cut.o: "?* ]] && echo yes)"
"$kiln" size "$tmp/size/lib.manifest.json" "$tmp/one.kiln" 2>"$tmp/err"
check "size: not an object" "1 kiln: error: $tmp/one.kiln: The file was not recognized as a valid object file" "$? $(cat "$tmp/err")"
"$kiln" size "$tmp/size/lib.manifest.json" "$tmp/size" 2>"$tmp/err"
check "size: a directory" "1 $tmp/size: error: is a directory, not a file" "$? $(cat "$tmp/err")"
"$kiln" size --budget -1 "$tmp/size/lib.manifest.json" 2>/dev/null
check "size --budget -1" "1" "$?"

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
