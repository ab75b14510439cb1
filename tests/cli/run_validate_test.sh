#!/usr/bin/env bash
# gpipe-run validate as a user runs it, on a tiny grid: the side-by-side table
# with skipped configurations and their reasons, the CSV plots/validation.py
# draws, --json, a saved profile reused with --profile; one error line with
# exit 2 for bad flags, exit 1 for --backend cuda without a GPU.
# Usage: run_validate_test.sh GPIPE_SIM GPIPE_RUN
set -u
run=$2
source "$(dirname "$0")/lib.sh"
mlp=mlp:layers=2,hidden=8  # 3 layers
quick=(--steps 2 --warmup 0 --repeats 1)

expect_status 0 "$run" validate --help
expect_out "--microbatches"

# K = 4 exceeds the 3 layers and M = 8 the batch: 9 configurations, 4 run.
expect_status 0 "$run" validate --model $mlp -K 1,2,4 -M 1,2,8 -N 4 "${quick[@]}" \
  --out "$tmp/v.csv" --save-profile "$tmp/p.json"
expect_out "profile     measured now at micro-batch sizes 2,4 (.*fp32; link .* us), saved to $tmp/p.json"
expect_out "^sched  recompute  "
expect_out "^gpipe  never         2    2    2 "
expect_out "skipped: --stages 4 exceeds the 3 layers of the model"
expect_out "skipped: --microbatches 8 exceeds --batch 4"
expect_out "9 configurations: 4 run, 5 skipped (cannot exist)"
expect_out "step time error: mean |error|"
expect_out "the grid runs 3 times, interleaved, 2 steps a run: each row's measured step is the median of its 3 warm steps"
expect_out "^noise: the band (interquartile range of the warm steps) is [0-9.]* % at the median"
expect_out "predictions inside their band"
grep -q "validate: round 3 of 3: 4 configurations" "$tmp/err" || fail "no line for round 3 on stderr: $(cat "$tmp/err")"
expect_out "peak activation equal to the prediction in 4 of 4 configurations"
[ "$(wc -l <"$tmp/v.csv")" -eq 10 ] || fail "v.csv has $(wc -l <"$tmp/v.csv") lines, expected 10"
grep -q '^gpipe,never,2,1,2,2,4,"[12],[12]",ok,,.*,1,4,[0-9.]*,[0-9.]*,[-0-9.]*,[0-9.]*,3,[0-9.]*,[0-9.]*,[0-9.]*,[0-9.]*,1,0,0.000,0.000,,1,0,0.000,0.000,,0,1,0,0.000,0.000,$' \
  "$tmp/v.csv" || fail "no ok row for K=2 M=2 (3 rounds x 1 warm step): $(cat "$tmp/v.csv")"
[ -s "$tmp/p.json" ] || fail "--save-profile wrote nothing"

# The CSV plots (where the Debian Python has matplotlib).
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  MPLCONFIGDIR="$tmp" /usr/bin/python3 plots/validation.py "$tmp/v.csv" --out "$tmp/v.png" >/dev/null \
    || fail "plots/validation.py failed on the CSV"
  [ -s "$tmp/v.png" ] || fail "plots/validation.py wrote no PNG"
fi

# The saved profile, reused; --json rows with the full diff.
expect_status 0 "$run" validate --model $mlp -K 2 -M 2 -N 4 --steps 3 --rounds 2 --profile "$tmp/p.json" \
  --schedule 1f1b --recompute always,except_last --json
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "--json output: $(cat "$tmp/out")"
import json, sys
rows = json.load(open(sys.argv[1]))
assert [r["recompute"] for r in rows] == ["stage", "stage_except_last"], rows
for r in rows:
    assert r["status"] == "ok" and r["schedule"] == "1f1b"
    # --rounds 2 of --steps 3: four warm steps, their median the row's.
    assert len(r["step_us"]) == 4 and r["noise"]["samples"] == 4, r["noise"]
    n = r["noise"]
    assert n["q1_us"] <= n["median_us"] <= n["q3_us"], n
    assert r["peak_activation_equal"] is True
    assert r["diff"]["only_in_predicted"] == [] and r["diff"]["only_in_measured"] == []
PY

expect_cuda "$run" validate --backend cuda --model $mlp -K 2 -M 2 -N 4 --profile "$tmp/p.json"
expect_status 2 "$run" validate --model $mlp -K 2 -M 2 -N 4 --steps 1
expect_one_error_line "--steps"
expect_status 2 "$run" validate --model $mlp -K 2 -M 2 -N 4 --rounds 0
expect_one_error_line "--rounds"
expect_status 2 "$run" validate --model $mlp -K 2 -M 2 -N 4 --out ''
expect_one_error_line "--out: an empty path names no file"
expect_status 2 "$run" validate --model $mlp -K 2 -M 2 -N 4 --save-profile ''
expect_one_error_line "--save-profile: an empty path names no file"
expect_status 2 "$run" validate --model $mlp -K 2 -M 2 -N 4 --schedule gpipe,zb
expect_one_error_line "--schedule: unknown value 'zb' (known: gpipe, 1f1b, "
expect_status 2 "$run" validate --model $mlp -K 2..1 -M 2 -N 4
expect_one_error_line "--stages: range '2..1' is reversed"
expect_status 2 "$run" validate --model $mlp -K 2 -M 2 -N 4 --profile "$tmp/p.json" --save-profile "$tmp/q.json"
expect_one_error_line "--save-profile"
expect_status 2 "$run" validate --model mlp:layers=3,hidden=8 -K 2 -M 2 -N 4 --profile "$tmp/p.json"
expect_one_error_line "--profile: it profiles 'mlp:layers=2,hidden=8'"
expect_status 2 "$run" validate --model $mlp -K 2 -M 2 -N 4 --out /nonexistent/dir/v.csv
expect_one_error_line "--out /nonexistent/dir/v.csv: cannot write: No such file or directory"
# An output path checked before the run leaves no file behind when the run then fails.
expect_status 2 "$run" validate --model mlp:layers=3,hidden=8 -K 2 -M 2 -N 4 --profile "$tmp/p.json" \
  --out "$tmp/left.csv"
[ ! -e "$tmp/left.csv" ] || fail "the writability check left $tmp/left.csv behind"

# A grid of which nothing can exist validates nothing: exit 2, after the rows say why.
expect_status 2 "$run" validate --model mlp:layers=2,hidden=8 -K 8 -M 2 -N 4 --warmup 0 --repeats 1
expect_out "skipped: --stages 8 exceeds"
# (stderr also has the profiler's line per layer; the error is the last line)
[ "$(tail -n 1 "$tmp/err")" = "gpipe-run validate: error: none of the 1 configurations of the grid can exist (each row \
says why): nothing was validated" ] || fail "validate of nothing: $(cat "$tmp/err")"

finish "gpipe-run validate"
