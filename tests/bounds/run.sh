#!/usr/bin/env bash
# Every load and store kiln emits for the shipped specs is proven inside its buffer. `kiln check
# --prove-bounds` proves each spec's kernels (its generic schedule) for every target and prints the
# count; `kiln gen --emit spec` compiles every variant (each bucket) for every target, and warns
# about an access it cannot prove (a failure here). The CUDA targets (whose library output kiln gen
# does not build yet) and the fuzzers' corpora (invalid specs among them) are left out.
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
targets=$("$kiln" targets | awk 'NR > 1 && $1 != "" && $3 != "cuda" { print $1 }' | paste -sd, -)
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
