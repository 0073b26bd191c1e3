# Shared by the test scripts: one PASS/FAIL/SKIP line per check, which scripts/test.sh counts.
# Source it, then call `check NAME COMMAND...`, `skip NAME REASON`, and `finish` last.

REPORT_FAILED=0

check() {
  local name=$1
  shift
  local out
  if out=$("$@" 2>&1); then
    echo "PASS $name"
  else
    echo "FAIL $name"
    printf '%s\n' "$out" | tail -n 20 | sed 's/^/    | /'
    REPORT_FAILED=1
  fi
}

skip() {
  echo "SKIP $1 ($2)"
}

finish() {
  return "$REPORT_FAILED"
}
