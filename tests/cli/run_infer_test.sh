#!/usr/bin/env bash
# gpipe-run infer as a user runs it: a Llama stream on CPU threads prints the
# measured metrics (text and --json) and writes a trace with each item's
# latency in its last forward's args; bad input is one error line, exit 2.
# Usage: run_infer_test.sh GPIPE_SIM GPIPE_RUN
set -u
run=$2
source "$(dirname "$0")/lib.sh"
model=llama:layers=2,hidden=32,heads=4,kv_heads=2,ffn=48,seq=16,vocab=64

expect_status 0 "$run" infer --model "$model" -K 2 -b 2 -R 12 -B 2 --trace "$tmp/stream.json"
for line in "^workload    inference: 12 items of 2 samples, closed loop with at most 2 in flight" \
            "^partition   .* (balanced on the forward costs of the model's analytic fp32 costs)" \
            "^throughput  .* items/s" "^latency     first .* p99 " "^bottleneck  stage " "^ *rank  layers"; do
  expect_out "$line"
done
python3 - "$tmp/stream.json" <<'PY' || fail "trace: $(head -c 400 "$tmp/stream.json")"
import json, sys
d = json.load(open(sys.argv[1]))
last = [e for e in d["traceEvents"] if e.get("ph") == "X" and e["args"].get("kind") == "F" and e["args"]["stage"] == 1]
assert len(last) == 12, len(last)
assert all(e["args"]["latency_us"] > 0 for e in last)
assert d["otherData"]["gpipe"]["source"]["kind"] == "cpu"
assert d["otherData"]["gpipe"]["stream"]["metrics"]["requests"] == 12
PY

expect_status 0 "$run" infer --model "$model" -K 2 -R 6 --arrival-interval-us 3000 --json
python3 - "$tmp/out" <<'PY' || fail "--json: $(cat "$tmp/out")"
import json, sys
d = json.load(open(sys.argv[1]))
m = d["metrics"]
assert d["config"]["in_flight"] == 2 and d["config"]["requests"] == 6, d["config"]
for key in ("step_time_us", "throughput_items_per_s", "steady_throughput_items_per_s", "latency_us", "ranks",
            "bottleneck_stage"):
    assert key in m, key
assert m["step_time_us"] >= 5 * 3000, m["step_time_us"]  # the last item arrives at 15 ms
PY

# An inference profile: forwards alone, no backward; training refuses it.
expect_status 0 "$run" profile --model "$model" --micro-batch-sizes 2 --workload inference --repeats 2 --warmup 1 \
  --out "$tmp/inference-profile.json"
python3 - "$tmp/inference-profile.json" <<'PY' || fail "inference profile: $(head -c 300 "$tmp/inference-profile.json")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["workload"] == "inference", p.get("workload")
s = p["layers"][1]["samples"][0]
assert s["fwd_us"] > 0 and s["bwd_us"] == 0 and "bwd_input_us" not in s, s
PY
expect_status 0 "$1" run --workload inference --profile "$tmp/inference-profile.json" -K 2 -b 2 -R 8
expect_status 2 "$1" run --profile "$tmp/inference-profile.json" -K 2 -M 2 -N 4
expect_one_error_line "the profile was measured for inference"

# validate --workload inference: a small grid, its table, summary and CSV.
expect_status 0 "$run" validate --workload inference --model "$model" --stages 1,2 --in-flight 1,2 \
  --micro-batch-sizes 2 --requests 8 --rounds 2 --repeats 2 --warmup 1 --out "$tmp/validate.csv"
expect_out "^  K   B   b     items/s   measured"
expect_out "^4 configurations: 4 run, 0 skipped"
expect_out "^throughput: median |error| "
expect_out "^peak activation equal to the prediction on every rank in "
[ "$(wc -l <"$tmp/validate.csv")" -eq 5 ] || fail "validate CSV: $(cat "$tmp/validate.csv")"

bad() {  # bad TEXT ARGS...: exit 2 with TEXT in one error line
  local text=$1; shift
  expect_status 2 "$run" "$@"
  expect_one_error_line -- "$text"
}
bad "--in-flight must be at least 1" infer --model "$model" -K 2 -B 0
bad "--requests must be at least 1" infer --model "$model" -K 2 -R 0
bad "--arrival-rate must be a finite positive number" infer --model "$model" -K 2 --arrival-rate -3
bad "give --stages K" infer --model "$model"
# dit's cache=1: each block keeps its streams' last keys and values (2 streams x 2 x b T H floats)
# from the start; training and a training profile refuse it in one line.
cached=dit:layers=2,hidden=32,heads=4,tokens=16,cache=1
expect_status 0 "$run" infer --model $cached -K 2 -b 2 -R 6 -B 2 --json
python3 - "$tmp/out" <<'PY' || fail "cache=1's state: $(cat "$tmp/out")"
import json, sys
ranks = json.load(open(sys.argv[1]))["metrics"]["ranks"]
per_block = 2 * 2 * (2 * 16 * 32) * 4  # 2 streams, K and V, b T H floats
assert [r["state_bytes"] for r in ranks] == [per_block, per_block], ranks
assert all(r["peak_activation_bytes"] > r["state_bytes"] for r in ranks), ranks
PY
bad "dit's cache=1 serves inference streams, which have no backward: profile it with --workload inference" \
  profile --model $cached --micro-batch-sizes 1 --out "$tmp/cached.json"
bad "keeps state from one item of an inference stream to the next (dit's cache=1): a training step has no stream" \
  train --model $cached -K 2 -M 2 -N 4 --steps 1
# The CUDA backend serves streams too (exec/cuda/inference/); without a GPU,
# or in a build without CUDA, it says so in one line, exit 1.
"$run" infer --backend cuda --model "$model" -K 2 -R 4 >"$tmp/out" 2>"$tmp/err"
status=$?
if [ "$status" -ne 0 ]; then
  [ "$status" -eq 1 ] || fail "infer --backend cuda exited $status: $(cat "$tmp/err")"
  expect_one_error_line -- "gpipe-run infer: failed: "
  grep -qE "no CUDA device|this build has no CUDA backend" "$tmp/err" || fail "infer --backend cuda: $(cat "$tmp/err")"
fi
bad "--sm-per-stage applies to --backend cuda only" infer --model "$model" -K 2 --sm-per-stage 4
bad "--stages 9 exceeds the 4 layers" infer --model "$model" -K 9
bad "--batch is for training" validate --workload inference --model "$model" --stages 1 --micro-batch-sizes 1 --batch 4
bad "--in-flight is for inference: add --workload inference" validate --model "$model" --stages 1 --microbatches 1 --batch 2 --in-flight 2
bad "give --micro-batch-sizes LIST" validate --workload inference --model "$model" --stages 1
bad "give --batch N" validate --model "$model" --stages 1 --microbatches 1
finish run_infer_test
