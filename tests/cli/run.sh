#!/usr/bin/env bash
# CLI tests: drive `kiln simplify` exactly as users and acceptance checks do (argv, stdin,
# stdout, stderr, exit code). Usage: run.sh <path to kiln>
set -uo pipefail
kiln="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
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

# a missing file is an error, not a crash
"$kiln" simplify "$tmp/does-not-exist" >/dev/null 2>"$tmp/err"
check "missing file exit code" 1 "$?"
check "missing file message" "kiln: error: cannot open $tmp/does-not-exist" "$(cat "$tmp/err")"

# usage errors exit non-zero with a message
"$kiln" >/dev/null 2>&1
rc=$?
check "no subcommand fails" 1 "$((rc != 0))"
"$kiln" --help >"$tmp/out" 2>&1
check "help exit code" 0 "$?"
check "help names simplify" 1 "$(grep -c 'simplify' "$tmp/out" | awk '{print ($1 > 0)}')"

# determinism: the same input gives the same bytes
a="$("$kiln" simplify "$here/simplify.in")"
b="$("$kiln" simplify "$here/simplify.in")"
check "deterministic" "$a" "$b"

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
