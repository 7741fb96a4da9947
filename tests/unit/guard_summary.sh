#!/usr/bin/env bash
# Sums what the tests that run generated kernels logged (tests/unit/guard_pages.h): their kernel runs
# under guard pages, each side, and the faults. Fails on a fault, or where a side ran less often than
# the other (every kernel runs both ways).
set -euo pipefail
log="$1"
[[ -f "$log" ]] || { echo "guard pages: no log at $log (no test that runs kernels ran)"; exit 0; }
awk '
  $1 == "runs" { after += $2; before += $3 }
  $1 == "fault" { faults++; print "fault at " $2 }
  $1 == "expected-fault" { expected++ }
  END {
    printf "%d kernel runs under guard pages (after: %d, before: %d), %d faults (and %d a death test provoked)\n",
      after + before, after, before, faults, expected
    if (faults > 0 || after != before) exit 1
  }' "$log"
