# Shared by the test scripts: the PASS/FAIL/SKIP lines, which scripts/test.sh counts, of
# the log of `cargo test ... -- --nocapture`.

# cargo_test_lines LABEL SUFFIX LOG: one line per test the log reports, "PASS LABEL TEST
# SUFFIX", "FAIL LABEL TEST (log: LOG)", or "SKIP LABEL TEST SUFFIX (REASON)" for a test
# that printed "skipped TEST: REASON" (zebra_net::testbed::skip): the harness reports such
# a test "ok", but it did not do its work.
cargo_test_lines() {
  awk -v label="$1" -v suffix="$2" -v logfile="$3" '
    NR == FNR {
      if (match($0, /^skipped [^ :]+: /)) reason[substr($0, 9, RLENGTH - 10)] = substr($0, RLENGTH + 1)
      next
    }
    /^test [^ ]+ \.\.\. ok$/ {
      if ($2 in reason) print "SKIP " label " " $2 suffix " (" reason[$2] ")"
      else print "PASS " label " " $2 suffix
    }
    /^test [^ ]+ \.\.\. FAILED$/ { print "FAIL " label " " $2 " (log: " logfile ")" }
  ' "$3" "$3"
}
