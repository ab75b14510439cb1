#!/usr/bin/env bash
# Long work says how long it will take: gpipe-run train --steps
# 100000000 and gpipe-run profile --repeats 100000 print one estimate line on
# stderr after a second of work, in a log too (stderr is a file here), and
# no bar there (no carriage return); they are stopped once it is seen. Short
# work prints no estimate. The line's arithmetic is tests/tools/progress_test.cpp's.
# Usage: progress_estimate_test.sh GPIPE_SIM GPIPE_RUN
source "$(dirname "$0")/lib.sh"
run=$2
model=(--model mlp:layers=2,hidden=8)

# first_line_then_stop CMD...: starts CMD (stdout in $tmp/out, stderr in
# $tmp/err), waits up to 120 s for a line on stderr, then stops it.
first_line_then_stop() {
  "$@" >"$tmp/out" 2>"$tmp/err" &
  local pid=$!
  for _ in $(seq 1200); do
    grep -q . "$tmp/err" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}
# expect_estimate WORK: stderr is one line, "about <duration> for WORK".
expect_estimate() {
  local n; n=$(wc -l <"$tmp/err")
  [ "$n" -eq 1 ] || fail "expected one estimate line, got $n: $(cat -v "$tmp/err")"
  grep -qE "^about [0-9]+ (d|h|min|s)( [0-9]+ (h|min|s))? for $1\$" "$tmp/err" \
    || fail "no estimate for '$1': $(cat -v "$tmp/err")"
  grep -q $'\r' "$tmp/err" && fail "a bar (carriage returns) on a stderr that is not a terminal"
}

first_line_then_stop "$run" train "${model[@]}" -K 2 -M 2 -N 8 --steps 100000000 --json
expect_estimate "100000000 steps"
[ -s "$tmp/out" ] && fail "train --json put something but its JSON on stdout: $(head -c 200 "$tmp/out")"
first_line_then_stop "$run" profile --model mlp:layers=4,hidden=256 --micro-batch-sizes 1,8 --repeats 100000 \
  --out "$tmp/p.json"
expect_estimate "100002 passes over every micro-batch size"

# Short work: no estimate, in text and in JSON.
expect_status 0 "$run" train "${model[@]}" -K 2 -M 2 -N 8 --steps 3 --json
[ -s "$tmp/err" ] && fail "a short train --json wrote to stderr: $(cat -v "$tmp/err")"
expect_status 0 "$run" train "${model[@]}" -K 2 -M 2 -N 8 --steps 3
expect_out '^step 3/3  loss '
[ -s "$tmp/err" ] && fail "a short train wrote to stderr: $(cat -v "$tmp/err")"

finish progress_estimate_test
