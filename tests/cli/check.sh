# Sourced by the CLI test scripts (run.sh, tune.sh): counters, a scratch directory removed on exit,
# and check NAME EXPECTED ACTUAL, which counts a pass or prints the difference.
pass=0
fail=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

check() {  # name, expected, actual
  if [[ "$2" == "$3" ]]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: $1"
    diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | head -20
  fi
}
