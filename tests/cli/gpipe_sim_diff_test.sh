#!/usr/bin/env bash
# gpipe-sim diff as a user runs it: the report, --json, and the exit status
# (0 within --tolerance, 1 beyond it, 2 for bad input), on GPipe K=2, M=2
# traces written here by hand. Usage: gpipe_sim_diff_test.sh GPIPE_SIM
set -u
sim=$1
source "$(dirname "$0")/lib.sh"

event() {
  printf '{"name": "%s", "cat": "compute", "ph": "X", "pid": %d, "tid": 0, "ts": %d, "dur": %d}' \
    "$1" "$2" "$3" "$4"
}
# trace TF TB SOURCE [M]: GPipe fill/drain on 2 ranks, F of TF us and B of TB us:
# the forwards end at 3 TF, the step at 3 (TF + TB).
trace() {
  local tf=$1 tb=$2 source=$3 m=${4:-2}
  local d=$((3 * tf)) device=""
  [ "$source" = sim ] || device="Test CPU"
  cat <<JSON
{"traceEvents": [
$(event 0F0 0 0 "$tf"), $(event 0F1 0 "$tf" "$tf"), $(event 1F0 1 "$tf" "$tf"),
$(event 1F1 1 $((2 * tf)) "$tf"), $(event 1B1 1 "$d" "$tb"), $(event 1B0 1 $((d + tb)) "$tb"),
$(event 0B1 0 $((d + tb)) "$tb"), $(event 0B0 0 $((d + 2 * tb)) "$tb")],
 "displayTimeUnit": "ns",
 "otherData": {"gpipe": {"format": "gpipe-trace", "version": 1,
  "schedule": {"name": "gpipe", "num_ranks": 2, "num_stages": 2, "num_microbatches": $m,
               "recompute": "never", "stage_to_rank": [0, 1]},
  "source": {"kind": "$source", "device": "$device"}}}}
JSON
}
trace 100 200 sim >"$tmp/pred.json"
trace 100 200 cpu >"$tmp/same.json"
trace 101 202 cpu >"$tmp/slower1.json"   # step 909 us: -0.99 %
trace 103 206 cpu >"$tmp/slower3.json"   # step 927 us: -2.91 %
trace 100 200 cpu 4 >"$tmp/m4.json"

# Identical: all zero, exit 0.
expect_status 0 "$sim" diff "$tmp/pred.json" "$tmp/same.json"
expect_out '^predicted: sim (gpipe K=2 M=2)   measured: cpu (Test CPU, gpipe K=2 M=2)$'
expect_out '^step time   predicted      900.0 us   measured      900.0 us   error +0.00 %$'
expect_out '^bubble      predicted       33.3 %    measured       33.3 %    error +0.0 points$'
expect_out '^  B             4        200.0 us       200.0 us      0.0 us    +0.0 %$'
[ ! -s "$tmp/err" ] || fail "stderr not empty: $(cat "$tmp/err")"

# Within the default 2 %: exit 0.
expect_status 0 "$sim" diff "$tmp/pred.json" "$tmp/slower1.json"
expect_out 'error -0.99 %$'

# Beyond it: the report, then one line on stderr, exit 1; a wider --tolerance passes.
expect_status 1 "$sim" diff "$tmp/pred.json" "$tmp/slower3.json"
expect_out '^step time   predicted      900.0 us   measured      927.0 us   error -2.91 %$'
expect_out '^  F             4        100.0 us       103.0 us      3.0 us    -2.9 %$'
expect_out '^start drift mean 9.0 us, max 21.0 us$'
expect_out '^  0B0 (rank 0)     predicted 200.0 us  measured 206.0 us  error -6.0 us  start drift -21.0 us$'
expect_one_error_line "step time error -2.91 % exceeds --tolerance 2.0 %"
expect_status 0 "$sim" diff "$tmp/pred.json" "$tmp/slower3.json" --tolerance 3
expect_status 1 "$sim" diff "$tmp/pred.json" "$tmp/slower3.json" --tolerance 2.5
expect_one_error_line "exceeds --tolerance 2.5 %"
expect_status 0 "$sim" diff "$tmp/pred.json" "$tmp/slower3.json" --tolerance 3 --worst 1
[ "$(grep -c ' (rank [01]) ' "$tmp/out")" -eq 1 ] || fail "--worst 1 lists one action: $(cat "$tmp/out")"

# --json: the same numbers as one JSON document, with the verdict.
expect_status 0 "$sim" diff "$tmp/pred.json" "$tmp/same.json" --json
expect_out '"step_time_error_pct": 0.0'
expect_out '"matched": 8'
expect_out '"within_tolerance": true'
expect_status 1 "$sim" diff "$tmp/pred.json" "$tmp/slower3.json" --json
expect_out '"measured_step_us": 927.0'
expect_out '"within_tolerance": false'
expect_one_error_line "exceeds --tolerance 2.0 %"
head -c 1 "$tmp/out" | grep -q '{' || fail "--json stdout starts with the document"

# Bad input: one line, exit 2.
expect_status 2 "$sim" diff "$tmp/pred.json" "$tmp/m4.json"
expect_one_error_line "different schedules (predicted vs measured): num_microbatches 2 vs 4"
expect_status 2 "$sim" diff "$tmp/pred.json" "$tmp/none.json"
expect_one_error_line "$tmp/none.json: cannot read: No such file or directory"
head -c 40 "$tmp/pred.json" >"$tmp/trunc.json"
expect_status 2 "$sim" diff "$tmp/trunc.json" "$tmp/same.json"
expect_one_error_line "trunc.json: not valid JSON"
echo '{"traceEvents": []}' >"$tmp/bare.json"
expect_status 2 "$sim" diff "$tmp/pred.json" "$tmp/bare.json"
expect_one_error_line "bare.json: field 'otherData' is missing"
expect_status 2 "$sim" diff "$tmp/pred.json" "$tmp/same.json" --tolerance -1
expect_one_error_line -- "--tolerance"
expect_status 2 "$sim" diff "$tmp/pred.json" "$tmp/same.json" --worst -1
expect_one_error_line -- "--worst"
expect_status 2 "$sim" diff "$tmp/pred.json"
expect_one_error_line "MEASURED"
expect_status 0 "$sim" diff --help
expect_out "--tolerance"

finish "gpipe-sim diff"
