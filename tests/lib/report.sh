# Shared by the test scripts: one PASS/FAIL/SKIP line per check, which scripts/test.sh counts.
# Source it, then call `check NAME COMMAND...`, `skip NAME REASON`, and `finish` last.

REPORT_FAILED=0

# check NAME COMMAND...: PASS when COMMAND succeeds; FAIL, with the end of its output, when
# any step of it fails. COMMAND (a shell function, say) runs in a subshell with errexit on,
# as a command of its own: bash ignores errexit in everything run as the condition of an
# `if`, `while`, `&&` or `||`, where only the last command would decide.
check() {
  local name=$1
  shift
  local out status errexit=0
  case $- in *e*) errexit=1 ;; esac
  set +e
  out=$(set -e; "$@" 2>&1)
  status=$?
  [ "$errexit" = 0 ] || set -e
  if [ "$status" = 0 ]; then
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
