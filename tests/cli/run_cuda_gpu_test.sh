#!/usr/bin/env bash
# gpipe-run train --backend cuda on a GPU, as a user runs it (label gpu; exits
# 77, which CTest counts as skipped, on a machine without a CUDA device or
# with a build that has no CUDA backend):
# - 4 stages on SM partitions: the trace has compute actions of different
#   ranks that overlap in time, and the GPU's kernels (cat "kernel");
# - the trace reads back into gpipe-sim diff against a prediction;
# - --timing events gives the same set of actions;
# - with two GPUs or more, two processes (torchrun-style variables) train over
#   NCCL and the process of the loss stage reports.
# Usage: run_cuda_gpu_test.sh GPIPE_SIM GPIPE_RUN
set -u
sim=$1
run=$2
source "$(dirname "$0")/lib.sh"

if ! "$run" train --backend cuda --model mlp:layers=1,hidden=8 -K 1 -M 1 -N 1 --steps 1 \
    >"$tmp/out" 2>"$tmp/err"; then
  if grep -q -e "no CUDA device" -e "this build has no CUDA backend" "$tmp/err"; then
    echo "skipped: $(cat "$tmp/err")"
    exit 77
  fi
  fail "a one-stage cuda run failed: $(cat "$tmp/err")"
fi

model=mlp:layers=8,hidden=256
expect_status 0 "$run" train --backend cuda --model $model -K 4 -M 8 -N 32 --steps 3 \
  --trace "$tmp/cuda.json"
expect_out "cuda: "
expect_out "^device memory: .* peak used on the GPU"
cat "$tmp/out"
/usr/bin/python3 - "$tmp/cuda.json" <<'PY' || fail "the 4-stage trace: see above"
import json, sys
trace = json.load(open(sys.argv[1]))
events = trace["traceEvents"]
compute = [e for e in events if e.get("ph") == "X" and e.get("cat") == "compute"]
kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
overlaps = sum(1 for a in compute for b in compute
               if a["pid"] < b["pid"] and a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"])
print(f"compute actions {len(compute)}, kernels {len(kernels)}, overlapping pairs across ranks {overlaps}")
assert trace["otherData"]["gpipe"]["source"] == "cuda", trace["otherData"]["gpipe"]["source"]
assert overlaps > 0, "no two stages ran at the same time"
assert kernels, "no kernel events"
PY

# The measured trace against the simulator's prediction on the model's
# analytic fp32 costs: the numbers differ, the diff must read both and pair them.
expect_status 0 "$sim" profile --model $model --device h100 --dtype fp32 --micro-batch-sizes 4 \
  --out "$tmp/analytic.json"
expect_status 0 "$sim" run --profile "$tmp/analytic.json" --stages 4 --microbatches 8 --batch 32 \
  --trace "$tmp/pred.json"
expect_status 0 "$sim" diff --tolerance 1e9 "$tmp/pred.json" "$tmp/cuda.json"
expect_out "step"

expect_status 0 "$run" train --backend cuda --model $model -K 4 -M 8 -N 32 --steps 2 --timing events \
  --json
/usr/bin/python3 -c "import json,sys; d=json.load(open('$tmp/out')); assert d['metrics']['step_time_us'] > 0" \
  || fail "--timing events --json: $(cat "$tmp/out")"

gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$gpus" -ge 2 ]; then
  port=$((29500 + RANDOM % 1000))
  for rank in 0 1; do
    RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      "$run" train --backend cuda --model $model -K 2 -M 4 -N 16 --steps 3 --json \
      >"$tmp/rank$rank.out" 2>"$tmp/rank$rank.err" &
  done
  wait %1 || fail "rank 0 failed: $(cat "$tmp/rank0.err")"
  wait %2 || fail "rank 1 failed: $(cat "$tmp/rank1.err")"
  [ ! -s "$tmp/rank0.out" ] || fail "rank 0 (not the loss stage) printed: $(cat "$tmp/rank0.out")"
  /usr/bin/python3 -c "import json; d=json.load(open('$tmp/rank1.out')); assert len(d['losses']) == 3" \
    || fail "rank 1's report: $(cat "$tmp/rank1.out")"
else
  echo "one GPU: the two-process NCCL run is not checked here"
fi

finish run_cuda_gpu_test
