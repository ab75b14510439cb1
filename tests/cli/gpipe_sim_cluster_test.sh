#!/usr/bin/env bash
# gpipe-sim on a cluster as a user runs it: a tensor-parallel profile
# (gpipe-sim profile --tensor-parallel), then run and sweep with data
# parallelism, ZeRO and nodes; what they print and write; one error line and
# exit 2 for each impossible request.
# Usage: gpipe_sim_cluster_test.sh GPIPE_SIM GPIPE_RUN
set -u
sim=$1
run=$2
source "$(dirname "$0")/lib.sh"
model=llama:layers=8,hidden=512,heads=8,kv_heads=4,ffn=1408,seq=512,vocab=1024

expect_status 0 "$sim" profile --model "$model" --device h100 --tensor-parallel 4 --sequence-parallel \
  --micro-batch-sizes 1,2 --out "$tmp/tp4.json"
expect_out "tensor parallel over 4 GPUs, sequence parallel: "
python3 - "$tmp/tp4.json" <<'PY' || fail "the profile does not say its split: $(head -c 300 "$tmp/tp4.json")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["tensor_parallel"] == 4 and p["sequence_parallel"] is True, p
PY

# Four replicas of a 2-stage pipeline of 4-GPU stages on nodes of 8: each
# stage boundary inside a node, each data-parallel group across 4 nodes.
expect_status 0 "$sim" run --profile "$tmp/tp4.json" -K 2 -M 8 -N 16 --schedule 1f1b --tensor-parallel 4 \
  --sequence-parallel --data-parallel 4 --zero 1 --gpus-per-node 8
expect_out "^parallel    TP 4 (sequence parallel) x PP 2 x DP 4 = 32 GPUs, ZeRO 1"
expect_out "^cluster     32 GPUs, 4 nodes of 8: TP 4 inside a node, 2 stages to a pipeline, 4 pipelines; stage boundaries inside a node: 1 of 1; a DP group spans 4 node(s)"
expect_out "^reduction   each stage's gradients over its 4 replicas (reduce-scatter, buckets of 25.00 MB) on 5 us + 50 GB/s"
expect_out "^cluster     global batch 64 (4 replicas of 16)"
expect_out "between nodes"

# --json says the same, and the reductions are in the trace on their own lane.
expect_status 0 "$sim" run --profile "$tmp/tp4.json" -K 2 -M 8 -N 16 --data-parallel 4 --json \
  --trace "$tmp/dp.json"
python3 - "$tmp/out" "$tmp/dp.json" <<'PY' || fail "json or trace: $(head -c 400 "$tmp/out")"
import json, sys
c = json.load(open(sys.argv[1]))["config"]
assert c["tensor_parallel"] == 4 and c["data_parallel"] == 4 and c["zero"] == 0, c
assert c["data_parallel_link"]["bandwidth_GBps"] == 450, c  # no nodes: the profile's link
events = json.load(open(sys.argv[2]))["traceEvents"]
lanes = {(e["pid"], e["args"]["name"]) for e in events if e.get("name") == "thread_name"}
assert (0, "reduce") in lanes and (1, "reduce") in lanes, lanes
reductions = [e for e in events if e.get("ph") == "X" and e["name"] == "0REDUCE_GRAD" and e["dur"] > 0]
assert len(reductions) == 1, reductions
assert reductions[0]["args"]["group"] == "stage 0 of every data-parallel replica", reductions[0]
PY

# A profile whose link carries the collectives' own fit reduces over it.
python3 - "$tmp/tp4.json" "$tmp/fitted.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["link"]["collective"] = {"latency_us": 20, "bandwidth_GBps": 100}
json.dump(p, open(sys.argv[2], "w"))
PY
expect_status 0 "$sim" run --profile "$tmp/fitted.json" -K 2 -M 8 -N 16 --data-parallel 4 --json
python3 - "$tmp/out" <<'PY' || fail "the collectives' fit not taken: $(head -c 400 "$tmp/out")"
import json, sys
link = json.load(open(sys.argv[1]))["config"]["data_parallel_link"]
assert link == {"latency_us": 20, "bandwidth_GBps": 100}, link
PY

# More replicas lengthen the step by their reduction only.
expect_status 0 "$sim" run --profile "$tmp/tp4.json" -K 2 -M 8 -N 16 --json
one=$(python3 -c "import json,sys; print(json.load(open('$tmp/out'))['metrics']['step_time_us'])")
expect_status 0 "$sim" run --profile "$tmp/tp4.json" -K 2 -M 8 -N 16 --data-parallel 8 --json
eight=$(python3 -c "import json,sys; print(json.load(open('$tmp/out'))['metrics']['step_time_us'])")
python3 -c "import sys; sys.exit(0 if $eight > $one else 1)" || fail "8 replicas ($eight us) not slower than one ($one us)"

# A sweep holds them fixed across its grid.
expect_status 0 "$sim" sweep --profile "$tmp/tp4.json" -K 1,2 -M 4,8 -N 16 --data-parallel 2 --zero 2 \
  --out "$tmp/sweep.csv"
expect_out "4 configurations: 4 simulated"

# The planner: every T x K x D = 8 on nodes of 4, the fastest that fit, every row in the CSV.
expect_status 0 "$sim" plan --model "$model" --device h100 --gpus 8 --gpus-per-node 4 --global-batch 32 \
  --micro-batch-sizes 1,4 --out "$tmp/plan.csv"
expect_out "^llama:layers=8,hidden=512,heads=8,kv_heads=4,ffn=1408,seq=512,vocab=1024 on 8 x NVIDIA H100 80GB HBM3 (4 a node), global batch 32 x 512 tokens"
expect_out "^144 configurations: "
expect_out "^the 10 fastest that fit:"
expect_out "every configuration: $tmp/plan.csv"
[ "$(wc -l <"$tmp/plan.csv")" -eq 145 ] || fail "plan.csv has $(wc -l <"$tmp/plan.csv") lines, not 145"
/usr/bin/python3 plots/plan_heatmap.py "$tmp/plan.csv" --out "$tmp/plan.png" >/dev/null ||
  fail "plan_heatmap.py could not draw the plan"

bad() {
  local line=$1; shift
  expect_status 2 "$sim" "$@"
  expect_one_error_line "$line"
}
bad "--tensor-parallel 2: the profile is one GPU's of 4" run --profile "$tmp/tp4.json" -K 2 -M 4 -N 8 --tensor-parallel 2
bad "--sequence-parallel: the profile was made without sequence parallelism" \
  run --profile transformer-24L-h1024-h100 -K 2 -M 4 -N 8 --sequence-parallel
bad "--zero 1 shards over the data-parallel group: give --data-parallel 2 or more" \
  run --profile "$tmp/tp4.json" -K 2 -M 4 -N 8 --zero 1
bad "--tensor-parallel 4 x --stages 2 x --data-parallel 2 = 16 GPUs, but --gpus is 8" run --profile "$tmp/tp4.json" -K 2 -M 4 -N 8 --data-parallel 2 --gpus 8 --gpus-per-node 8
bad "--tensor-parallel 3 does not divide the 8 attention heads" \
  profile --model "$model" --device h100 --tensor-parallel 3 --micro-batch-sizes 1 --out "$tmp/x.json"
bad "tensor parallelism splits the transformer and llama families' blocks; dit has none" \
  profile --model dit-xl-2 --device h100 --tensor-parallel 2 --micro-batch-sizes 1 --out "$tmp/x.json"
bad "--workload inference: an inference stream is one pipeline of one GPU a stage" \
  run --workload inference --profile transformer-24L-h1024-h100 -K 2 -b 1 -R 4 --data-parallel 2

bad "--zero: unknown value '4'" plan --model "$model" --device h100 --gpus 8 --global-batch 32 --zero 0,4
bad "--schedules: zb-auto searches schedules itself" plan --model "$model" --device h100 --gpus 8 --global-batch 32 \
  --schedules 1f1b,zb-auto
bad "--gpus is required" plan --model "$model" --device h100 --global-batch 32
bad "unknown device 'h900'" plan --model "$model" --device h900 --gpus 8 --global-batch 32
bad "give --device, or --cluster (which names its device)" plan --model "$model" --gpus 8 --global-batch 32
bad "--cluster: unknown cluster 'dgx-z' (known: dgx-a100, dgx-h100, meta-h100-roce)" \
  plan --model "$model" --cluster dgx-z --gpus 8 --global-batch 32
bad "--cluster-file: name one of its clusters with --cluster" \
  plan --model "$model" --device h100 --cluster-file "$tmp/plan.csv" --gpus 8 --global-batch 32

# A cluster preset gives the device, the node and the network; a flag beside it wins.
expect_status 0 "$sim" plan --model "$model" --cluster dgx-a100 --gpus 16 --global-batch 32 --micro-batch-sizes 1 \
  --pipeline 2 --tensor-parallel 8 --schedules 1f1b --recompute never --zero 0 --out "$tmp/a100.csv"
expect_out "on 16 x NVIDIA A100-SXM4-80GB (8 a node)"
expect_out "^cluster dgx-a100 (NVIDIA DGX A100 SuperPOD (Selene)): 25 GB/s a GPU between nodes, 5 us$"
expect_status 0 "$sim" plan --model "$model" --device a100 --gpus 16 --gpus-per-node 8 --global-batch 32 \
  --micro-batch-sizes 1 --pipeline 2 --tensor-parallel 8 --schedules 1f1b --recompute never --zero 0 \
  --inter-node-bandwidth-gbps 25 --out "$tmp/flags.csv"
cmp -s "$tmp/a100.csv" "$tmp/flags.csv" || fail "--cluster dgx-a100 is not its flags"
expect_status 0 "$sim" plan --model "$model" --cluster dgx-a100 --inter-node-bandwidth-gbps 5 --gpus 16 \
  --global-batch 32 --micro-batch-sizes 1 --pipeline 2 --tensor-parallel 8 --schedules 1f1b --recompute never --zero 0
expect_out "^cluster dgx-a100 (NVIDIA DGX A100 SuperPOD (Selene)): 5 GB/s a GPU between nodes, 5 us$"
cat >"$tmp/clusters.json" <<'JSON'
{"clusters": [{"key": "mine", "name": "My cluster", "device": "h200", "gpus_per_node": 4, "inter_node_GBps": 12.5,
  "inter_node_latency_us": 2, "source": "measured by me"}]}
JSON
expect_status 0 "$sim" plan --model "$model" --cluster mine --cluster-file "$tmp/clusters.json" --gpus 8 \
  --global-batch 32 --micro-batch-sizes 1 --schedules 1f1b --recompute never --zero 0
expect_out "on 8 x NVIDIA H200 (4 a node)"
expect_out "^cluster mine (My cluster): 12.5 GB/s a GPU between nodes, 2 us$"
# run and sweep take a cluster too: the node and the network (the device is the profile's).
expect_status 0 "$sim" run --profile transformer-24L-h1024-h100 -K 4 -M 8 -N 32 --data-parallel 4 --cluster dgx-a100
cp "$tmp/out" "$tmp/run_cluster"
expect_status 0 "$sim" run --profile transformer-24L-h1024-h100 -K 4 -M 8 -N 32 --data-parallel 4 --gpus-per-node 8 \
  --inter-node-bandwidth-gbps 25
cmp -s "$tmp/out" "$tmp/run_cluster" || fail "run --cluster dgx-a100 is not its flags"
expect_out "5 us + bytes at 25 GB/s between nodes"
bad "--cluster: unknown cluster 'nope'" sweep --profile transformer-24L-h1024-h100 -K 2,4 -M 8 -N 32 --cluster nope
bad "--workload inference: an inference stream is one pipeline of one GPU a stage" \
  run --workload inference --profile transformer-24L-h1024-h100 -K 2 -b 1 -R 4 --cluster dgx-h100
echo '{"clusters": [{"key": "bad"}]}' >"$tmp/bad_clusters.json"
bad "bad_clusters.json: clusters[0].name: is missing" \
  plan --model "$model" --cluster bad --cluster-file "$tmp/bad_clusters.json" --gpus 8 --global-batch 32

# Context parallelism: each sequence over C GPUs beside a stage's T (a stage
# of T x C GPUs), in the profile, run and plan; what cannot be split is one line.
expect_status 0 "$sim" profile --model "$model" --device h100 --tensor-parallel 2 --sequence-parallel \
  --context-parallel 4 --micro-batch-sizes 1 --out "$tmp/cp4.json"
expect_out "^context parallel over 4 GPUs (all-gather): 128 tokens of 512 per GPU, keys and values on 450 GB/s$"
python3 - "$tmp/cp4.json" <<'PY' || fail "the profile does not say its context split: $(head -c 300 "$tmp/cp4.json")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["tensor_parallel"] == 2 and p["context_parallel"] == 4, p
PY
expect_status 0 "$sim" run --profile "$tmp/cp4.json" -K 2 -M 4 -N 8 --tensor-parallel 2 --sequence-parallel \
  --context-parallel 4 --data-parallel 2 --gpus-per-node 8
expect_out "^parallel    TP 2 (sequence parallel) x CP 4 x PP 2 x DP 2 = 32 GPUs"
expect_out "TP 2 inside a node, CP 4 beside it (8 GPUs a stage), 2 stages to a pipeline"
expect_out "gradients over its 2 replicas x 4 context GPUs"
bad "--context-parallel 2: the profile is one GPU's of 4" \
  run --profile "$tmp/cp4.json" -K 2 -M 4 -N 8 --context-parallel 2
expect_status 0 "$sim" run --model "$model" --device h100 --tensor-parallel 2 --sequence-parallel \
  --context-parallel 8 --context-parallel-form ring -K 2 -M 4 -N 8 --gpus-per-node 8
expect_out "x CP 8 x PP 2 x DP 1 = 32 GPUs"
# A ring profile says its form, and the executor, which runs the all-gather
# form, refuses to train from it.
expect_status 0 "$sim" profile --model "$model" --device h100 --context-parallel 2 --context-parallel-form ring \
  --micro-batch-sizes 1 --out "$tmp/ring.json"
expect_out "^context parallel over 2 GPUs (ring): "
python3 - "$tmp/ring.json" <<'PY' || fail "the profile does not say its form: $(head -c 300 "$tmp/ring.json")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["context_parallel"] == 2 and p["context_parallel_form"] == "ring", p
PY
expect_status 2 "$run" train --model "$model" --profile "$tmp/ring.json" --context-parallel 2 -K 1 -M 1 -N 1 --steps 1
expect_one_error_line "--profile: its context group shares keys and values in the ring form; the executor runs Llama 3's all-gather"
expect_status 0 "$sim" plan --model "$model" --device h100 --gpus 16 --global-batch 16 --context-parallel 1,2 \
  --micro-batch-sizes 1 --schedules 1f1b --recompute never --zero 0 --out "$tmp/cp_plan.csv"
expect_out "^  T   C   K    D"
python3 - "$tmp/cp_plan.csv" <<'PY' || fail "the plan's rows: $(head -c 400 "$tmp/cp_plan.csv")"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["status"] != "skipped"]
assert {r["context_parallel"] for r in rows} == {"1", "2"}, rows[:2]
for r in rows:
    assert int(r["tensor_parallel"]) * int(r["context_parallel"]) * int(r["pipeline"]) * int(r["data_parallel"]) == 16, r
PY
bad "--context-parallel 2: llama:layers=8,hidden=512,heads=8,kv_heads=4,ffn=1408,seq=512,vocab=1024,attn=naive has naive attention" \
  profile --model "$model,attn=naive" --device h100 --context-parallel 2 --micro-batch-sizes 1 --out "$tmp/x.json"
bad "--context-parallel 3: 2C = 6 does not divide the sequence of 512" \
  run --model "$model" --device h100 --context-parallel 3 -K 2 -M 4 -N 8

# Overlap, collective by collective: --tp-comm-overlap hides the tensor group's
# collectives behind the GEMMs (the plan's TP share falls), and needs sequence
# parallelism; --overlap-param-gather takes ZeRO's gather off the step's end.
big=llama:layers=8,hidden=4096,heads=32,kv_heads=8,ffn=14336,seq=4096,vocab=32000
for flags in "" "--tp-comm-overlap" "--overlap-param-gather"; do
  expect_status 0 "$sim" plan --model "$big" --device h100 --gpus 64 --global-batch 64 --tensor-parallel 8 \
    --pipeline 2 --micro-batch-sizes 1 --schedules 1f1b --recompute never --zero 1 $flags --out "$tmp/o.csv"
  python3 -c "import csv,sys; r=[x for x in csv.DictReader(open(sys.argv[1])) if x['status']=='ok'][0]; print(r['step_us'], r['tensor_parallel_share'], r['data_parallel_share'])" "$tmp/o.csv" >>"$tmp/overlaps"
done
python3 - "$tmp/overlaps" <<'PY' || fail "overlap: $(cat "$tmp/overlaps")"
import sys
(plain, tp, dp), (hidden, tp2, dp2), (gathered, tp3, dp3) = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
assert hidden < plain and tp2 < tp, (plain, hidden, tp, tp2)
# The same TP time (its share of a shorter step, to the CSV's 4 decimals).
assert gathered < plain and dp3 < dp and abs(tp3 * gathered - tp * plain) < 1e-4 * plain, (plain, gathered, dp, dp3)
PY
bad "--tp-comm-overlap overlaps sequence parallelism's all-gathers and reduce-scatters with the GEMMs (Megatron-LM's); drop --no-sequence-parallel" \
  plan --model "$big" --device h100 --gpus 64 --global-batch 64 --tp-comm-overlap --no-sequence-parallel
bad "--tp-comm-overlap overlaps sequence parallelism's all-gathers and reduce-scatters with the GEMMs (Megatron-LM's); give --sequence-parallel" \
  run --model "$big" --device h100 --tensor-parallel 8 --tp-comm-overlap -K 2 -M 4 -N 8

finish gpipe_sim_cluster_test
