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
expect_out "^the [0-9]* runs fitted on: mean |error| [0-9.]* %, worst [0-9.]* %; [0-9]* of [0-9]* fit their device's memory"
# The runs no issue names are checks, summed apart: no constant is fitted to them.
expect_out "^the [0-9]* checks (fitted on none): mean |error| [0-9.]* %, worst [0-9.]* %"
# A run published as its time of an iteration (Korthikanti et al. 2022) is compared to that time.
expect_out "^GPT 22B (2022), full  *8  *1  *1  *1  *1  *4  *4  *1.420  "
expect_out "^GPT 1.7B  *1  *1  *1  *1  *32  *16  *512  *3.528  "
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
expect_status 2 scripts/published --sim "$tmp"
expect_one_error_line "no gpipe-sim there"
printf 'not a program' >"$tmp/not-a-program"
chmod +x "$tmp/not-a-program"
expect_status 2 scripts/published --sim "$tmp/not-a-program" --only "GPT 18B"
expect_one_error_line "cannot run it"
printf '\xff\xfe' >"$tmp/latin.json"
expect_status 2 scripts/published --sim "$sim" --runs "$tmp/latin.json"
expect_one_error_line "latin.json: not JSON"
expect_status 2 scripts/published --sim "$sim" --out "$tmp/no-such-folder/p.csv"
expect_one_error_line "--out $tmp/no-such-folder/p.csv: cannot write there"
expect_status 2 scripts/published --sim "$sim" --no-such-flag
expect_one_error_line "unrecognized arguments: --no-such-flag"
# A configuration gpipe cannot run names the run and gpipe-sim's reason.
python3 - "$tmp/odd.json" <<'PY'
import json, sys
runs = json.load(open("published/runs.json"))
run = runs["runs"][0]
run["micro_batch_size"] = 3  # 512 / 32 replicas = 16 a replica: not a multiple of 3
json.dump({"runs": [run]}, open(sys.argv[1], "w"))
run["micro_batch_size"] = 16
run["published"]["tflops_per_gpu"] = 0
json.dump({"runs": [run]}, open(sys.argv[1] + ".zero", "w"))
run["published"]["tflops_per_gpu"] = 137
run["stages_per_rank"] = []
json.dump({"runs": [run]}, open(sys.argv[1] + ".nov", "w"))
run["stages_per_rank"] = [1]
run["published"]["step_s"] = 3.5  # and tflops_per_gpu: two figures for one run
json.dump({"runs": [run]}, open(sys.argv[1] + ".both", "w"))
del run["published"]["step_s"]
run["context_parallel"] = 2  # T x C x P x D = 64, not its 32 GPUs
json.dump({"runs": [run]}, open(sys.argv[1] + ".cp", "w"))
PY
expect_status 2 scripts/published --sim "$sim" --runs "$tmp/odd.json.zero"
expect_one_error_line "published.tflops_per_gpu must be a number above 0"
expect_status 2 scripts/published --sim "$sim" --runs "$tmp/odd.json.both"
expect_one_error_line "GPT 1.7B: published needs tflops_per_gpu or step_s (one of them)"
expect_status 2 scripts/published --sim "$sim" --runs "$tmp/odd.json.nov"
expect_one_error_line '"stages_per_rank" must be a non-empty list of 1 or more'
expect_status 2 scripts/published --sim "$sim" --runs "$tmp/odd.json.cp"
expect_one_error_line "GPT 1.7B: T x C x P x D is not its 32 GPUs"
expect_status 2 scripts/published --sim "$sim" --runs "$tmp/odd.json"
expect_one_error_line "GPT 1.7B: gpipe-sim cannot run this configuration: a replica's batch of 16 is not a multiple of 3"

finish "scripts/published"
