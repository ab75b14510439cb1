#!/usr/bin/env bash
# scripts/published as a user runs it: every run of published/runs.json
# predicted as it was run, and the table pinned to published/predicted.csv, so
# that a change to any prediction shows here (accept one by writing the file
# again: scripts/published --out published/predicted.csv). Bad input is one
# error line, exit 2.
# Usage: published_test.sh GPIPE_SIM GPIPE_RUN
set -u
sim=$1
source "$(dirname "$0")/lib.sh"

expect_status 0 scripts/published --sim "$sim" --out "$tmp/predicted.csv"
diff published/predicted.csv "$tmp/predicted.csv" >"$tmp/diff" ||
  fail "the predictions changed (accept them with scripts/published --out published/predicted.csv): $(cat "$tmp/diff")"
expect_out "^mean |error| [0-9.]* %, worst [0-9.]* %; [0-9]* of [0-9]* fit their device's memory"
expect_out "^GPT 1.7B  *1  *1  *1  *32  *16  *512  *3.528  "
# One run alone, by name.
expect_status 0 scripts/published --sim "$sim" --only "GPT 18B"
[ "$(grep -c '^GPT' "$tmp/out")" -eq 1 ] || fail "--only printed other runs: $(cat "$tmp/out")"

# Bad input: one line, exit 2.
printf '{' >"$tmp/bad.json"
expect_status 2 scripts/published --sim "$sim" --runs "$tmp/bad.json"
expect_one_error_line "bad.json: not JSON"
printf '{"runs": [{"name": "x"}]}' >"$tmp/short.json"
expect_status 2 scripts/published --sim "$sim" --runs "$tmp/short.json"
expect_one_error_line 'runs[0] (x) has no "source"'
expect_status 2 scripts/published --sim "$sim" --runs "$tmp/none.json"
expect_one_error_line "none.json: No such file or directory"
expect_status 2 scripts/published --sim "$sim" --only "GPT 2T"
expect_one_error_line "--only GPT 2T: no such run in"
expect_status 2 scripts/published --sim "$tmp/no-sim"
expect_one_error_line "no gpipe-sim there"
# A configuration gpipe cannot run names the run and gpipe-sim's reason.
python3 - "$tmp/odd.json" <<'PY'
import json, sys
runs = json.load(open("published/runs.json"))
run = runs["runs"][0]
run["micro_batch_size"] = 3  # 512 / 32 replicas = 16 a replica: not a multiple of 3
json.dump({"runs": [run]}, open(sys.argv[1], "w"))
PY
expect_status 2 scripts/published --sim "$sim" --runs "$tmp/odd.json"
expect_one_error_line "GPT 1.7B: gpipe-sim cannot run this configuration: a replica's batch of 16 is not a multiple of 3"

finish "scripts/published"
