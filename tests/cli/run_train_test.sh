#!/usr/bin/env bash
# gpipe-run train as a user runs it: a tiny real run (loss per step, the
# metrics table, --json, --trace read back by gpipe-sim diff), one clear error
# line with exit 2 for bad flags, exit 1 for --backend cuda without a GPU and for
# an injected fault, which names the rank and the action.
# Usage: run_train_test.sh GPIPE_SIM GPIPE_RUN
set -u
sim=$1
run=$2
source "$(dirname "$0")/lib.sh"
mlp=mlp:layers=2,hidden=8  # 3 layers: block0, block1, loss
tiny=(--model $mlp -K 2 -M 2 -N 4)

expect_status 0 "$run" --help
expect_out "train"
expect_status 0 "$run" train --help
expect_out "--inject-fault"

# A real run: one loss line per step, then the metrics as gpipe-sim run prints them.
expect_status 0 "$run" train "${tiny[@]}" --steps 3 --trace "$tmp/meas.json"
expect_out "^step 1/3  loss [0-9]"
expect_out "^step 3/3  loss [0-9]"
expect_out "schedule    gpipe, 2 stages on 2 ranks, 2 micro-batches of 2 samples (batch 4), recompute never"
expect_out "balanced on the model's analytic fp32 costs"
expect_out "analytic (K-1)/(M+K-1): 33.33 %"
expect_out "Megatron's convention; analytic (K-1)/M: 50.00 %"
expect_out "static (adamw, fp32)"
[ "$(grep -c '^ *[01] ' "$tmp/out")" -eq 2 ] || fail "expected one table row per rank: $(cat "$tmp/out")"
[ -s "$tmp/meas.json" ] || fail "--trace wrote nothing"

# The measured trace is a trace gpipe-sim reads: against itself no error, and
# against a prediction of the same schedule a report (exit 0 or 1 by tolerance, never 2).
expect_status 0 "$sim" diff "$tmp/meas.json" "$tmp/meas.json"
expect_status 0 "$sim" run --profile tests/data/profiles/valid_two_layers.json -K 2 -M 2 -N 4 \
  --trace "$tmp/pred.json"
"$sim" diff "$tmp/pred.json" "$tmp/meas.json" >"$tmp/out" 2>"$tmp/err"
status=$?
[ "$status" -le 1 ] || fail "gpipe-sim diff of a measured trace exited $status: $(cat "$tmp/err")"
expect_out "step time"

# --json: exactly {"losses": [...], "metrics": {...}, "step_times_us": [...]}, one loss per
# step and one time per measured step (--measure-steps), nothing else on stdout.
expect_status 0 "$run" train "${tiny[@]}" --steps 3 --measure-steps 2 --schedule 1f1b --recompute always \
  --optimizer momentum --lr 0.01 --seed 7 --check-finite --json
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "--json output: $(cat "$tmp/out")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert sorted(doc) == ["losses", "metrics", "step_times_us"], sorted(doc)
assert len(doc["losses"]) == 3 and all(isinstance(x, float) for x in doc["losses"])
assert len(doc["metrics"]["ranks"]) == 2 and doc["metrics"]["step_time_us"] > 0
# The metrics are of the measured step of median time: the lower median of two.
times = doc["step_times_us"]
assert len(times) == 2 and all(t > 0 for t in times), times
assert abs(doc["metrics"]["step_time_us"] - min(times)) < 1e-3, (doc["metrics"]["step_time_us"], times)
PY
[ ! -s "$tmp/err" ] || fail "--json wrote to stderr: $(cat "$tmp/err")"
# An explicit partition and the transformer.
expect_status 0 "$run" train --model transformer:layers=1,hidden=8,heads=2,seq=4 -K 3 -M 2 -N 2 \
  --steps 1 --partition 1,1,1 --backward-order forward
expect_out "partition   1,1,1 (1,1,1)"

# Failures while running: exit 1, one line.
expect_cuda "$run" train "${tiny[@]}" --steps 1 --backend cuda
# CUDA flags belong to --backend cuda.
expect_status 2 "$run" train "${tiny[@]}" --steps 1 --sm-per-stage 16
expect_one_error_line "--sm-per-stage applies to --backend cuda only"
expect_status 1 "$run" train "${tiny[@]}" --steps 2 --inject-fault 1:1F0
expect_one_error_line "1F0"
grep -qF "rank 1" "$tmp/err" || fail "the fault line does not name rank 1: $(cat "$tmp/err")"
expect_status 1 "$run" train "${tiny[@]}" --steps 2 --inject-fault 1:1F0:stall --watchdog-seconds 0.5
expect_one_error_line "gpipe-run train: failed: stalled: no action finished for "  # the time it waited
grep -qF "rank 1 in 1F0" "$tmp/err" || fail "the stall line does not name rank 1 in 1F0: $(cat "$tmp/err")"

# Bad usage: exit 2, one line naming the flag.
expect_status 2 "$run" train "${tiny[@]}"
expect_one_error_line "--steps is required"
expect_status 2 "$run" train --model $mlp -K 0 -M 2 -N 4 --steps 1
expect_one_error_line "--stages"
expect_status 2 "$run" train --model $mlp -K 4 -M 2 -N 4 --steps 1
expect_one_error_line "--stages 4 exceeds the 3 layers of the model"
expect_status 2 "$run" train --model $mlp -K 2 -M 8 -N 4 --steps 1
expect_one_error_line "--microbatches 8 exceeds --batch 4"
expect_status 2 "$run" train --model mlp:layers=2 -K 1 -M 1 -N 1 --steps 1
expect_one_error_line "hidden"
expect_status 2 "$run" train "${tiny[@]}" --steps 1 --schedule zb-h9
expect_one_error_line "--schedule"
expect_status 2 "$run" train "${tiny[@]}" --steps 1 --partition 1,1
expect_one_error_line "--partition 1,1 sums to 2 layers"
expect_status 2 "$run" train "${tiny[@]}" --steps 2 --measure-steps 3
expect_one_error_line "--measure-steps 3 exceeds --steps 2"
expect_status 2 "$run" train "${tiny[@]}" --steps 1 --lr 0
expect_one_error_line "--lr must be a positive number, got 0"
expect_status 2 "$run" train "${tiny[@]}" --steps 1 --inject-fault 1-1F0
expect_one_error_line "--inject-fault 1-1F0"
expect_status 2 "$run" train "${tiny[@]}" --steps 1 --inject-fault 3:1F0
expect_one_error_line "--inject-fault 3:1F0: there is no rank 3"
expect_status 2 "$run" train "${tiny[@]}" --steps 1 --profile "$tmp/none.json"
expect_one_error_line "--profile $tmp/none.json: no such file"
expect_status 2 "$run" train "${tiny[@]}" --steps 1 --trace /nonexistent/dir/t.json
expect_one_error_line "--trace /nonexistent/dir/t.json: cannot write: No such file or directory"
expect_status 2 "$run" fly
expect_one_error_line "unknown command 'fly'"


# Every family trains, as generated, searched (zb-auto) or read from a file.
mlp4=mlp:layers=4,hidden=8  # 5 layers: room for K x V = 4 stages
for family in interleaved-1f1b looped-bfs interleaved-zb zbv dualpipev zb-h1 zb-h2 zb-auto; do
  expect_status 0 "$run" train --model $mlp4 -K 2 -M 4 -N 8 --steps 2 --schedule $family
  expect_out "^step 2/2  loss [0-9]"
done
expect_status 0 "$run" train --model $mlp4 -K 2 -M 4 -N 8 --steps 2 --schedule zbv
expect_out "schedule    zbv, 4 stages on 2 ranks"
expect_out "^ *0  *0,3-4 "  # rank 0 holds stages 0 and 3 in the V
# zb-auto kept to two stages per rank trains the winner of that layout on 4 stages.
expect_status 0 "$run" train --model $mlp4 -K 2 -M 4 -N 8 --steps 2 --schedule zb-auto -V 2
expect_out "schedule    zb-auto, 4 stages on 2 ranks"
expect_out "^searched    kept [a-z0-9-]*, V=2$"
"$sim" schedule --schedule dualpipev -K 2 -M 4 --format csv >"$tmp/dpv.csv"
expect_status 0 "$run" train --model $mlp4 --schedule-file "$tmp/dpv.csv" -N 8 --steps 2
expect_out "schedule    dpv, 4 stages on 2 ranks, 4 micro-batches"
expect_status 0 "$run" train --model $mlp4 --schedule-file "$(dirname "$0")/../data/torch_csv/dualpipev_k2_m4_comms.csv" -N 8 --steps 2
expect_out "^step 2/2  loss [0-9]"
expect_status 2 "$run" train --model $mlp4 --schedule-file "$tmp/dpv.csv" -K 2 -N 8 --steps 2
expect_one_error_line "--stages cannot be used with --schedule-file"
expect_status 2 "$run" train --model $mlp4 -N 8 --steps 2
expect_one_error_line "give --stages K and --microbatches M, or --schedule-file FILE"
expect_status 2 "$run" train --model $mlp4 -K 2 -M 4 -N 8 --steps 2 --schedule dualpipev -V 3
expect_one_error_line "--stages-per-rank 3"

# The llama and dit families train on the CPU; their bad specs are one line and exit 2.
expect_status 0 "$run" train --model llama:layers=2,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=32 \
  -K 2 -M 2 -N 4 --steps 2 --schedule zb-h1
expect_out "step 2/2"
expect_status 0 "$run" train --model dit:layers=2,hidden=16,heads=2,tokens=6,patch=1,channels=2,classes=5 \
  -K 2 -M 2 -N 4 --steps 2 --schedule 1f1b
expect_out "step 2/2"
expect_status 2 "$run" train --model llama:layers=2,hidden=16,heads=4,kv_heads=3,ffn=24,seq=8,vocab=32 -K 1 -M 1 -N 1 --steps 1
expect_one_error_line "heads=4 is not divisible by kv_heads=3"
expect_status 2 "$run" train --model dit:layers=2,hidden=10,heads=4,tokens=6 -K 1 -M 1 -N 1 --steps 1
expect_one_error_line "hidden=10 is not divisible by heads=4"
expect_status 2 "$run" train --model llama4-8b -K 1 -M 1 -N 1 --steps 1
expect_one_error_line "unknown family or preset 'llama4-8b'"
expect_status 2 "$run" train --model llama3-8b:attn=sparse -K 1 -M 1 -N 1 --steps 1
expect_one_error_line "key 'attn' must be flash or naive, got 'sparse'"

# Out of memory on a worker: one line, exit 1, not a terminate.
expect_status 1 "$run" train --model $mlp4 -K 2 -M 4 -N 8 --steps 2 --inject-fault 1:1B2:oom
expect_one_error_line "gpipe-run train: failed: rank 1 ran out of memory in 1B2"

finish "gpipe-run train"
