#!/usr/bin/env bash
# kiln tune and kiln gen --tune-db as users and acceptance checks drive them: a short tune writes a
# sorted database of faster opts, gen applies it byte for byte the same on every run, a stale entry
# is reported and ignored, a malformed database is an error with file:line:col, an interrupt keeps
# what was found, and the runner prefixes the timing executable. Usage: tune.sh <path to kiln>
set -uo pipefail
kiln="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/check.sh"
entries() { grep -v '^#' "$1" | grep -v '^$'; }
# the best x86 target this machine runs: the tune times its kernels here (x86_64-avx512 where the
# CPU has AVX-512F, BW, DQ and VL, as the runtime's dispatch checks)
t=x86_64-avx2
flags="$(grep -m1 '^flags' /proc/cpuinfo)"
if [[ " $flags " == *" avx512f "* && " $flags " == *" avx512bw "* && " $flags " == *" avx512dq "* &&
  " $flags " == *" avx512vl "* ]]; then
  t=x86_64-avx512
fi

cat >"$tmp/g.kiln" <<'SPEC'
dim M in 1..256 specialize 1, %16
dim N in 1..256 specialize %16
dim K in 1..256

kernel sgemm(a: f32[M, K], b: f32[K, N]) -> (c: f32[M, N]) {
  c = a @ b
}
SPEC

# the keys: one per variant (6) for the one target
"$kiln" tune --list --name g --target "$t" --db "$tmp/g.db" "$tmp/g.kiln" >"$tmp/keys" 2>"$tmp/err"
check "tune --list: exit code" 0 "$?"
check "tune --list: one key per variant" "6" "$(wc -l <"$tmp/keys")"
check "tune --list: times nothing, writes nothing" "no db" "$([[ -e "$tmp/g.db" ]] && echo db || echo no db)"

# a target this machine cannot run, without a runner: an error before anything is built
"$kiln" tune --name g --target aarch64-neon --db "$tmp/no.db" --budget 1 "$tmp/g.kiln" 2>"$tmp/err"
check "tune another architecture without a runner: exit 1 and why" \
  "1 kiln: error: this machine cannot run aarch64-neon kernels (it is an x86_64 machine, the target's kernels are aarch64 code): tune on a machine that can, or name a --runner that runs them (an emulator, ssh)" \
  "$? $(cat "$tmp/err")"
if [[ $t == x86_64-avx2 ]]; then
  "$kiln" tune --name g --target x86_64-avx512 --db "$tmp/no.db" --budget 1 "$tmp/g.kiln" 2>"$tmp/err"
  check "tune x86_64-avx512 on a CPU without AVX-512: exit 1 and why" "1 yes" \
    "$? $(grep -q '^kiln: error: this machine cannot run x86_64-avx512 kernels (its CPU lacks avx512f' "$tmp/err" && echo yes)"
fi
check "tune refused: no database written" "no db" "$([[ -e "$tmp/no.db" ]] && echo db || echo no db)"

# a tune of a few seconds: a sorted database, each entry faster than the heuristics, on a known key
start=$(date +%s)
"$kiln" tune --name g --target "$t" --db "$tmp/g.db" --budget 8 --dim M=64,N=64,K=64 "$tmp/g.kiln" \
  2>"$tmp/tune.err"
rc=$?
took=$(($(date +%s) - start))
check "tune: exit code" 0 "$rc"
check "tune: within its budget (8 s, and the harness's build)" "yes" "$([[ $took -le 20 ]] && echo yes || echo "no: $took s")"
check "tune: no progress bar off a terminal" "0" "$(grep -c $'\r' "$tmp/tune.err")"
# the budget may end before the last variants: each one searched is reported, and counted
check "tune: reports each variant it searched" "$(grep -c ': heuristics .* us, [0-9]* candidates timed' "$tmp/tune.err")" \
  "$(sed -n 's/^kiln tune: \([0-9]*\) kernel variants searched.*/\1/p' "$tmp/tune.err")"
check "tune: the header" "# kiln tune database 1" "$(head -1 "$tmp/g.db" | cut -c1-22)"
# an entry for each variant whose best candidate was faster twice (whether one is depends on this
# machine and its load: the heuristics may already be the fastest)
check "tune: an entry per variant where the heuristics' opts did not stay" \
  "$(($(grep -c ': heuristics .* us, [0-9]* candidates timed' "$tmp/tune.err") - $(grep -c "the heuristics' opts stay" "$tmp/tune.err")))" \
  "$(entries "$tmp/g.db" | wc -l)"
# where none was faster this time, one by hand (the lanes the heuristics once gave M = 1), so that
# gen has an entry to apply
if [[ $(entries "$tmp/g.db" | wc -l) -eq 0 ]]; then
  echo "$(grep ' M1_Nx16 ' "$tmp/keys") opts=LANES(0,16);THREAD(0) block=0 us=1.000 heuristic_us=2.000" >>"$tmp/g.db"
fi
check "tune: sorted by hash, target, variant" "$(entries "$tmp/g.db" | LC_ALL=C sort -k1,1 -k2,2 -k3,3)" \
  "$(entries "$tmp/g.db")"
check "tune: every entry on a key of the library" "" \
  "$(entries "$tmp/g.db" | cut -d' ' -f1-4 | LC_ALL=C sort | comm -23 - <(LC_ALL=C sort "$tmp/keys"))"
check "tune: every entry measured faster than the heuristics" "" "$(entries "$tmp/g.db" | awk '{
  for (i = 4; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  if (!(v["us"] + 0 < v["heuristic_us"] + 0)) print }')"
check "tune: no temporary file left" "" "$(ls "$tmp" | grep '\.tmp$')"
cp "$tmp/g.db" "$tmp/first.db"

# gen with it: no warning, the entries' opts in the manifest, the same bytes on two runs
"$kiln" gen --name g --out "$tmp/o1" --target "$t" --tune-db "$tmp/g.db" "$tmp/g.kiln" 2>"$tmp/err"
check "gen --tune-db: exit code, no warning" "0 " "$? $(cat "$tmp/err")"
"$kiln" gen --name g --out "$tmp/o2" --target "$t" --tune-db "$tmp/g.db" "$tmp/g.kiln" 2>/dev/null
check "gen --tune-db: the same bytes twice" "" \
  "$(for f in "$tmp/o1"/*; do [[ $f == *.d ]] || cmp -s "$f" "$tmp/o2/$(basename "$f")" || echo "$(basename "$f") differs"; done)"
check "gen --tune-db: the depfile names the database" "1" "$(grep -c "$tmp/g.db" "$tmp/o1/g.d")"
check "gen --tune-db: each entry's opts in the manifest" "" "$(python3 - "$tmp/o1/g.manifest.json" "$tmp/g.db" <<'PY'
import json, re, sys
m = json.load(open(sys.argv[1]))
opts = {(v["target"], v["name"]): v["kernels"][0]["opts"] for k in m["kernels"] for v in k["variants"]}
for line in open(sys.argv[2]):
    if line.startswith("#") or not line.strip(): continue
    f = line.split()
    kv = dict(x.split("=", 1) for x in f[3:])
    want = [re.sub(r",", ", ", o) for o in kv["opts"].split(";")] if kv["opts"] != "-" else []
    if kv["block"] != "0": want.append("BLOCK(%s)" % kv["block"])
    got = opts.get((f[1], "%s[%s]" % (kv["kernel"], f[2])))
    if got != want: print(f[2], "got", got, "want", want)
PY
)"
"$kiln" gen --name g --out "$tmp/plain" --target "$t" "$tmp/g.kiln"
check "gen --tune-db: the tuned objects differ from the untuned" "differ" \
  "$(cmp -s "$tmp/plain/g_g_${t//-/_}.o" "$tmp/o1/g_g_${t//-/_}.o" && echo same || echo differ)"

# a second tune merges: the other target's entries stay
"$kiln" tune --name g --target cpu --db "$tmp/g.db" --budget 3 --dim M=32,N=32,K=32 --kernel sgemm "$tmp/g.kiln" \
  2>"$tmp/err"
check "tune cpu: exit code" "0" "$?"
check "tune cpu: the $t entries kept" "$(entries "$tmp/first.db")" "$(entries "$tmp/g.db" | grep " $t ")"
cp "$tmp/first.db" "$tmp/g.db"

# a stale entry: the kernel's name, target and variant, another hash: reported by line and kernel, ignored
stale_key="$(grep ' M1 ' "$tmp/keys")"
printf '%s\n' "0123456789abcdef ${stale_key#* } opts=UPCAST(0,2) block=0" >"$tmp/stale.db"
"$kiln" gen --name g --out "$tmp/o3" --target "$t" --tune-db "$tmp/stale.db" "$tmp/g.kiln" 2>"$tmp/err"
check "stale entry: exit code" 0 "$?"
check "stale entry: a warning naming the kernel" \
  "$tmp/stale.db:1: warning: the entry for kernel 'sgemm' (M1, $t) is for another version of it (hash 0123456789abcdef, now ${stale_key%% *}): ignored, the heuristics' opts are used (run kiln tune again)" \
  "$(cat "$tmp/err")"
check "stale entry: ignored (the untuned objects)" "same" \
  "$(cmp -s "$tmp/plain/g_g_${t//-/_}.o" "$tmp/o3/g_g_${t//-/_}.o" && echo same || echo differ)"
# the spec edited where it matters: the old database's entries go stale, each reported
sed 's/K in 1..256/K in 1..512/' "$tmp/g.kiln" >"$tmp/wider.kiln"
"$kiln" gen --name g --out "$tmp/o4" --target "$t" --tune-db "$tmp/g.db" "$tmp/wider.kiln" 2>"$tmp/err"
check "edited spec: every entry reported stale" "$(entries "$tmp/g.db" | wc -l)" "$(grep -c "warning: the entry for kernel 'sgemm'" "$tmp/err")"
# edited where it does not: a comment and another kernel, no warning
{ echo "# a comment"; cat "$tmp/g.kiln"; printf 'kernel twice(x: f32[N]) -> (y: f32[N]) {\n  y = x + x\n}\n'; } >"$tmp/more.kiln"
"$kiln" gen --name g --out "$tmp/o5" --target "$t" --tune-db "$tmp/g.db" "$tmp/more.kiln" 2>"$tmp/err"
check "comment and another kernel: no warning" "0 " "$? $(cat "$tmp/err")"

# a malformed database: file:line:col, exit 1, for gen and for tune
printf '# ok\n0123456789abcdef %s any kernel=sgemm opts=UPCAST(0,8 block=0\n' "$t" >"$tmp/bad.db"
col=$((41 + ${#t}))  # the opt's column, after the target's name
"$kiln" gen --name g --out "$tmp/o6" --target "$t" --tune-db "$tmp/bad.db" "$tmp/g.kiln" 2>"$tmp/err"
check "malformed: gen" "1 $tmp/bad.db:2:$col: error: expected an opt such as UPCAST(0,8), got 'UPCAST(0,8'" "$? $(cat "$tmp/err")"
"$kiln" tune --name g --target "$t" --db "$tmp/bad.db" --budget 1 "$tmp/g.kiln" 2>"$tmp/err"
check "malformed: tune" "1 $tmp/bad.db:2:$col: error: expected an opt such as UPCAST(0,8), got 'UPCAST(0,8'" "$? $(cat "$tmp/err")"
"$kiln" gen --name g --out "$tmp/o6" --target "$t" --tune-db "$tmp/none.db" "$tmp/g.kiln" 2>"$tmp/err"
check "missing database: gen" "1 $tmp/none.db: error: cannot open (No such file or directory)" "$? $(cat "$tmp/err")"
"$kiln" tune --name g --target "$t" --db "$tmp/x.db" --kernel nope "$tmp/g.kiln" 2>"$tmp/err"
check "unknown kernel" "1 kiln: error: no kernel named 'nope'" "$? $(cat "$tmp/err")"

# the runner prefixes the timing executable's command line
cat >"$tmp/runner.sh" <<'SH'
#!/usr/bin/env bash
echo "$@" >>"$(dirname "$0")/runner.log"
exec "$@"
SH
chmod +x "$tmp/runner.sh"
"$kiln" tune --name g --target "$t" --db "$tmp/r.db" --budget 2 --dim M=16,N=16,K=16 --kernel sgemm \
  --runner "$tmp/runner.sh" "$tmp/g.kiln" 2>"$tmp/err"
check "runner: exit code" "0" "$?"
check "runner: it ran the harness" "yes" "$(grep -q '/harness [0-9]* [0-9]*$' "$tmp/runner.log" && echo yes || echo no)"
"$kiln" tune --name g --target "$t" --db "$tmp/r2.db" --budget 2 --runner false "$tmp/g.kiln" 2>"$tmp/err"
check "runner that fails: an error, exit 1" "1" "$?"

# another machine's target: the harness cross-compiled (clang --target) and run under qemu, where installed
if command -v qemu-aarch64-static >/dev/null && command -v clang-19 >/dev/null && [[ -d /usr/aarch64-linux-gnu ]]; then
  "$kiln" tune --name g --target aarch64-neon --db "$tmp/a64.db" --budget 3 --dim M=16,N=16,K=16 --kernel sgemm \
    --variant Mx16_Nx16 --cc clang-19 --runner "qemu-aarch64-static -L /usr/aarch64-linux-gnu" "$tmp/g.kiln" 2>"$tmp/err"
  check "aarch64 under qemu: exit code" "0" "$?"
  check "aarch64 under qemu: the variant timed" "1" "$(grep -c 'sgemm\[Mx16_Nx16\]: heuristics .* us, [0-9]* candidates timed' "$tmp/err")"
fi

# interrupted: SIGINT finishes the run under way and keeps the database
# (its own stderr file, absent before it starts: the shared one held the aarch64 run's 'candidates
# timed', which the wait below could read before the background job's redirection truncated it,
# and sent the signal too early)
rm -f "$tmp/int.err"
"$kiln" tune --name g --target "$t" --db "$tmp/int.db" --budget 100 --dim M=128,N=128,K=128 "$tmp/g.kiln" \
  2>"$tmp/int.err" &
pid=$!
# once the search is under way (its first variant reported): a signal sent before kiln installs
# its handler would meet the SIG_IGN a script's background job starts with, and be lost (an ASan
# kiln on a loaded machine took longer than the 6 s this once slept)
for _ in $(seq 120); do
  grep -q 'candidates timed' "$tmp/int.err" 2>/dev/null && break
  sleep 0.5
done
kill -INT $pid
start=$(date +%s)
wait $pid
rc=$?
check "SIGINT: exit code 130" "130" "$rc"
check "SIGINT: stops within seconds" "yes" "$([[ $(($(date +%s) - start)) -le 8 ]] && echo yes || echo no)"
check "SIGINT: the database is there and reads" "0" \
  "$("$kiln" gen --name g --out "$tmp/o7" --target "$t" --tune-db "$tmp/int.db" "$tmp/g.kiln" 2>/dev/null; echo $?)"
check "SIGINT: said so" "1" "$(grep -c '(interrupted)' "$tmp/int.err")"

# the database tests/gen's tuned library is built with matches tests/gen/dispatch.kiln (else run
# `kiln tune --name kiln_gen_test --target x86_64-avx512 --db tests/gen/dispatch.tunedb --budget 90
# tests/gen/dispatch.kiln` again), and changes some kernels
"$kiln" gen --name kiln_gen_test --out "$tmp/gen" --target cpu,x86_64-avx2,x86_64-avx512 \
  --tune-db "$here/../gen/dispatch.tunedb" "$here/../gen/dispatch.kiln" 2>"$tmp/err"
# (the database's warnings only: the bounds prover warns about some tuned kernels' gated accesses,
# whose gates compare a dim's quotient, which it does not use yet)
check "tests/gen/dispatch.tunedb: no stale entry" "0 " "$? $(grep "dispatch.tunedb" "$tmp/err")"

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
