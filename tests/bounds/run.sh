#!/usr/bin/env bash
# Every load and store kiln emits for the shipped specs is proven inside its buffer. `kiln check
# --prove-bounds` proves each spec's kernels (its generic schedule) for every target and prints the
# count; `kiln gen --emit spec` compiles every variant (each bucket) for every target, and warns
# about an access it cannot prove (a failure here). The GPU targets are left out: kiln gen does not
# build CUDA's library output yet, and OpenCL's bgemm in bench/user.kiln (G up to 65536, one past
# the grid's second dim, so gpu dims merges its three loops into one id) has an index the prover
# does not bound (P * ((idx0 / P) % P) + P * P * (idx0 / (P * P)) + r3): kiln gen warns and emits it
# without opts, one work item for the whole call (issue 18). So are the fuzzers' corpora (invalid
# specs among them).
# Usage: run.sh KILN REPO_ROOT
set -u
kiln=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mapfile -t specs < <(cd "$root" && find bench kernels tests examples -path tests/fuzz -prune -o -name '*.kiln' ! -name 'bad*' -print 2>/dev/null |
  sort)
if ((${#specs[@]} < 10)); then
  echo "FAIL: only ${#specs[@]} specs found under $root"
  exit 1
fi
targets=$("$kiln" targets | awk 'NR > 1 && $1 != "" && $3 != "cuda" && $3 != "opencl" { print $1 }' | paste -sd, -)
rc=0
proven=0
unproven=0
gated=0
for spec in "${specs[@]}"; do
  "$kiln" check --prove-bounds "$root/$spec" >"$tmp/out" 2>"$tmp/err"
  code=$?
  p=$(grep -c ': proved by ' "$tmp/out")
  u=$(grep -c ': UNPROVEN' "$tmp/out")
  proven=$((proven + p))
  unproven=$((unproven + u))
  gated=$((gated + $(grep -c 'under its gate' "$tmp/out")))
  if ((code != 0 || u != 0)); then
    echo "FAIL: kiln check --prove-bounds $spec: exit $code, $u unproven"
    grep ': UNPROVEN' "$tmp/out" | head -5
    head -c 2000 "$tmp/err"
    rc=1
  fi
  if ! "$kiln" gen --emit spec --name b --out "$tmp/gen" --target "$targets" "$root/$spec" >/dev/null 2>"$tmp/err" ||
    grep -q 'is not proven' "$tmp/err"; then
    echo "FAIL: kiln gen $spec (every variant, targets $targets):"
    head -c 2000 "$tmp/err"
    rc=1
  fi
done
if ((unproven == 0)); then
  echo "${#specs[@]} specs, targets $targets: every emitted access proven ($proven, $gated of them under their gate) and 0 unproven"
else
  echo "${#specs[@]} specs: $proven accesses proven and $unproven unproven"
fi
((proven > 0)) || rc=1
exit $rc
