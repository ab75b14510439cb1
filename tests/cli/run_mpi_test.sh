#!/usr/bin/env bash
# gpipe-run train --backend cpu under mpirun, one rank per process, as a user
# runs it: the same losses as the run of threads, the reporter alone printing,
# one trace on one clock; and failures: an injected fault, a stall and a
# process killed from outside each end every process, with one line each
# naming the rank and action, and mpirun exits non-zero. Nothing hangs.
# Exit 77 (skipped) where there is no mpirun or this gpipe-run has no MPI.
# Usage: run_mpi_test.sh GPIPE_SIM GPIPE_RUN
set -u
sim=$1
run=$2
source "$(dirname "$0")/lib.sh"
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
# Two cores here; root in containers: both need saying to Open MPI.
launch=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && launch+=(--allow-run-as-root)
# Our lines only: mpirun adds its own banners on failure.
ours() { grep '^gpipe-run' "$tmp/err" >"$tmp/ours"; }

mlp=mlp:layers=4,hidden=16
expect_status 0 "$run" train --model $mlp -K 2 -M 4 -N 8 --steps 3 --schedule 1f1b
grep '^step [0-9]' "$tmp/out" >"$tmp/threads"
expect_status 0 timeout 120 "${launch[@]}" -np 2 "$run" train --model $mlp -K 2 -M 4 -N 8 --steps 3 \
  --schedule 1f1b --trace "$tmp/mpi.json"
if grep -q "built without MPI" "$tmp/err"; then echo "gpipe-run has no MPI: skipped"; exit 77; fi
expect_out "backend     cpu: one process per rank (2 processes, mpirun), MPI between ranks"
grep '^step [0-9]' "$tmp/out" >"$tmp/processes"
cmp -s "$tmp/threads" "$tmp/processes" || fail "losses differ from the threads' run: $(cat "$tmp/threads" "$tmp/processes")"
[ "$(grep -c '^model ' "$tmp/out")" -eq 1 ] || fail "more than one process reported: $(cat "$tmp/out")"
python3 - "$tmp/mpi.json" <<'PY' || fail "the trace's clock: $(head -c 400 "$tmp/mpi.json")"
import json, sys
clock = json.load(open(sys.argv[1]))["otherData"]["clock"]
assert clock == {"method": "shared monotonic clock (one node)", "max_error_ns": 0}, clock
PY
"$sim" diff "$tmp/mpi.json" "$tmp/mpi.json" >/dev/null 2>&1 || fail "gpipe-sim diff does not read the trace"

# Two stages per process (zbv, V = 2) and the ping-pong clock: still the same losses.
expect_status 0 "$run" train --model $mlp -K 2 -M 4 -N 8 --steps 2 --schedule zbv
grep '^step [0-9]' "$tmp/out" >"$tmp/threads"
expect_status 0 env GPIPE_MPI_CLOCK=ping-pong timeout 120 "${launch[@]}" -np 2 "$run" train --model $mlp \
  -K 2 -M 4 -N 8 --steps 2 --schedule zbv --trace "$tmp/zbv.json" --json
python3 - "$tmp/zbv.json" "$tmp/out" "$tmp/threads" <<'PY' || fail "zbv under mpirun: $(cat "$tmp/out")"
import json, sys
clock = json.load(open(sys.argv[1]))["otherData"]["clock"]
assert clock["method"].startswith("ping-pong offsets to rank 0 (1 node"), clock
assert 0 < clock["max_error_ns"] < 10**8, clock  # half a round trip on one node: well under 0.1 s
out = json.load(open(sys.argv[2]))  # the reporter's JSON alone on stdout
assert len(out["metrics"]["ranks"]) == 2
threads = [line.split()[-1] for line in open(sys.argv[3])]
assert [f"{loss:.6f}" for loss in out["losses"]] == threads, (out["losses"], threads)
PY

# A tied embedding: the two processes exchange the token table's gradient
# before they step (REDUCE_GRAD, WAIT_REDUCE_GRAD), and train as the threads do.
tied=llama:layers=2,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=32,tied=1
expect_status 0 "$run" train --model $tied -K 2 -M 2 -N 4 --steps 3 --schedule 1f1b
grep '^step [0-9]' "$tmp/out" >"$tmp/threads"
expect_status 0 timeout 120 "${launch[@]}" -np 2 "$run" train --model $tied -K 2 -M 2 -N 4 --steps 3 \
  --schedule 1f1b --trace "$tmp/tied.json"
grep '^step [0-9]' "$tmp/out" >"$tmp/processes"
cmp -s "$tmp/threads" "$tmp/processes" || fail "tied: losses differ from the threads' run: $(cat "$tmp/threads" "$tmp/processes")"
grep -q '"1WAIT_REDUCE_GRAD"' "$tmp/tied.json" || fail "tied: no exchange in the trace"

# Data parallelism: K = 2 x D = 2 processes, each replica on its own 4 of
# the 8 samples, train as the threads do on all 8 (the losses as printed);
# the trace holds each rank's reduction on its "reduce" lane, the group named.
expect_status 0 "$run" train --model $mlp -K 2 -M 2 -N 8 --steps 3 --schedule 1f1b --optimizer momentum
grep '^step [0-9]' "$tmp/out" >"$tmp/threads"
expect_status 0 timeout 120 "${launch[@]}" -np 4 "$run" train --model $mlp -K 2 -M 2 -N 4 --steps 3 \
  --schedule 1f1b --optimizer momentum --data-parallel 2 --trace "$tmp/dp.json"
expect_out "replicas    2 of the pipeline (global batch 8)"
expect_out "^cluster     global batch 8 (2 replicas of 4): [0-9.]* samples/s"
grep '^step [0-9]' "$tmp/out" >"$tmp/processes"
cmp -s "$tmp/threads" "$tmp/processes" || fail "data parallel: losses differ from the threads' run: $(cat "$tmp/threads" "$tmp/processes")"
[ "$(grep -c '^model ' "$tmp/out")" -eq 1 ] || fail "data parallel: more than one process reported: $(cat "$tmp/out")"
python3 - "$tmp/dp.json" <<'PY' || fail "data parallel: the trace's reduce lanes"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
lanes = [e for e in events if e.get("ph") == "X" and e.get("cat") == "comm" and e["name"].endswith("REDUCE_GRAD")]
assert sorted((e["pid"], e["args"]["group"]) for e in lanes) == [
    (0, "stage 0 of every data-parallel replica"), (1, "stage 1 of every data-parallel replica")], lanes
assert all(e["dur"] > 0 for e in lanes), lanes
PY
# A failure names the rank with its replica and part (every replica has a rank 1,
# and each injects the fault: whichever replica's failure is announced first is named).
expect_status 1 timeout 120 "${launch[@]}" -np 4 "$run" train --model $mlp -K 2 -M 2 -N 4 --steps 2 \
  --data-parallel 2 --inject-fault 1:1F1
ours; grep -qE "rank 1 \(replica [01], part 0\) failed in 1F1: injected fault" "$tmp/ours" ||
  fail "data parallel: the failure line: $(cat "$tmp/err")"
# What cannot run says so in one line, exit 2: replicas without processes,
# a launch of the wrong size.
expect_status 2 "$run" train --model $mlp -K 2 -M 2 -N 4 --steps 1 --data-parallel 2
expect_one_error_line "--data-parallel 2 runs each replica's ranks as processes: launch 4 processes under mpirun or srun"
expect_status 2 timeout 120 "${launch[@]}" -np 2 "$run" train --model $mlp -K 2 -M 2 -N 4 --steps 1 --data-parallel 2
ours; grep -qF "the schedule has 2 ranks in each of 2 replicas but mpirun started 2 processes: launch 2 x 2 = 4" "$tmp/ours" ||
  fail "data parallel: the launch's size: $(cat "$tmp/err")"

# ZeRO 1: each replica keeps AdamW's state for its half of every stage's
# values, reduce-scatters the gradients and all-gathers the weights in STEP.
# It trains as the threads do (the losses as printed), and each rank's static
# bytes are the simulator's to the byte: here stage 0 has 1905 parameters
# (odd), so replica 0 keeps 953 values' state: 8 x 1905 + 8 x 953 = 22864.
odd=mlp:layers=4,hidden=15
expect_status 0 "$run" train --model $odd -K 2 -M 2 -N 8 --steps 3 --optimizer adamw --partition 1,4
grep '^step [0-9]' "$tmp/out" >"$tmp/threads"
expect_status 0 timeout 120 "${launch[@]}" -np 4 "$run" train --model $odd -K 2 -M 2 -N 4 --steps 3 \
  --optimizer adamw --partition 1,4 --data-parallel 2 --zero 1
expect_out "ZeRO 1: each stage's gradients reduce-scattered over its 2 copies"
grep '^step [0-9]' "$tmp/out" >"$tmp/processes"
cmp -s "$tmp/threads" "$tmp/processes" || fail "ZeRO 1: losses differ from the threads' run: $(cat "$tmp/threads" "$tmp/processes")"
expect_status 0 timeout 120 "${launch[@]}" -np 4 "$run" train --model $odd -K 2 -M 2 -N 4 --steps 1 \
  --optimizer adamw --partition 1,4 --data-parallel 2 --zero 1 --json
cp "$tmp/out" "$tmp/zero-run.json"
expect_status 0 "$run" profile --model $odd --micro-batch-sizes 2 --repeats 1 --out "$tmp/odd.json"
expect_status 0 "$sim" run --profile "$tmp/odd.json" -K 2 -M 2 -N 4 --optimizer adamw --partition 1,4 \
  --data-parallel 2 --zero 1 --json
python3 - "$tmp/zero-run.json" "$tmp/out" <<'PY' || fail "ZeRO 1: static bytes: $(cat "$tmp/zero-run.json")"
import json, sys
measured, predicted = (json.load(open(p))["metrics"]["ranks"] for p in sys.argv[1:])
assert [r["static_bytes"] for r in measured] == [r["static_bytes"] for r in predicted] == [22864, 68584], (measured, predicted)
PY
# What ZeRO cannot run says so in one line, exit 2: stages 2 and 3 (the
# simulator predicts them), ZeRO without replicas, one stage with a tied
# embedding (its two copies' shares differ).
expect_status 2 timeout 120 "${launch[@]}" -np 4 "$run" train --model $mlp -K 2 -M 2 -N 4 --steps 1 \
  --data-parallel 2 --zero 2
ours; grep -qF -- "--zero 2: the executor runs ZeRO 1" "$tmp/ours" || fail "ZeRO 2: $(cat "$tmp/err")"
expect_status 2 "$run" train --model $mlp -K 2 -M 2 -N 4 --steps 1 --zero 1
expect_one_error_line "--zero 1 shards over the data-parallel group: give --data-parallel 2 or more"
expect_status 2 timeout 120 "${launch[@]}" -np 2 "$run" train --model llama:layers=2,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=32,tied=1 \
  -K 1 -M 1 -N 2 --steps 1 --data-parallel 2 --zero 1
ours; grep -qF "ties its embedding to its head" "$tmp/ours" || fail "ZeRO 1, tied, one stage: $(cat "$tmp/err")"

# Tensor parallelism: K = 2 ranks of T = 2 parts each, the blocks' heads and
# feed-forward columns split, train as the threads do (the losses as printed),
# and the loss stage's part 0 (world rank 2) alone reports.
gpt=transformer:layers=3,hidden=32,heads=4,seq=16,vocab=64
expect_status 0 "$run" train --model $gpt -K 2 -M 2 -N 8 --steps 3 --schedule 1f1b --optimizer momentum
grep '^step [0-9]' "$tmp/out" >"$tmp/threads"
expect_status 0 timeout 120 "${launch[@]}" -np 4 "$run" train --model $gpt -K 2 -M 2 -N 8 --steps 3 \
  --schedule 1f1b --optimizer momentum --tensor-parallel 2 --trace "$tmp/tp-trace.json"
expect_out "tensor par. each rank's blocks split over 2 processes"
expect_out "^   1      3-4 "
grep '^step [0-9]' "$tmp/out" >"$tmp/processes"
cmp -s "$tmp/threads" "$tmp/processes" || fail "tensor parallel: losses differ from the threads' run: $(cat "$tmp/threads" "$tmp/processes")"
[ "$(grep -c '^model ' "$tmp/out")" -eq 1 ] || fail "tensor parallel: more than one process reported: $(cat "$tmp/out")"
# Its trace shows each block's two all-reduces in every F and B on the rank's
# tensor-parallel lane: rank 0 (embed, block0, block1) 2 x 2 per pass, rank 1
# (block2, head) 2, of b x seq x hidden fp32 = 4 x 16 x 32 x 4 bytes each.
python3 - "$tmp/tp-trace.json" <<'PY' || fail "tensor parallel: the trace's collectives"
import collections, json, sys
trace = json.load(open(sys.argv[1]))
assert trace["otherData"]["gpipe"]["tensor_parallel"] == 2
spans = [e for e in trace["traceEvents"] if e.get("cat") == "collective"]
per_action = collections.Counter((e["pid"], e["args"]["within"]) for e in spans)
expected = {(0, f"0{k}{m}"): 4 for k in "FB" for m in (0, 1)} | {(1, f"1{k}{m}"): 2 for k in "FB" for m in (0, 1)}
assert per_action == expected, per_action
assert all(e["name"] == "all-reduce" and e["args"]["bytes"] == 8192 and e["dur"] >= 0 for e in spans), spans[:3]
lanes = {(e["pid"], e["args"]["name"]) for e in trace["traceEvents"] if e.get("name") == "thread_name"}
assert (0, "tensor-parallel") in lanes and (1, "tensor-parallel") in lanes, lanes
# Each lies inside the action it names.
actions = {(e["pid"], e["name"]): (e["ts"], e["ts"] + e["dur"]) for e in trace["traceEvents"]
           if e.get("ph") == "X" and e.get("cat") == "compute"}
for e in spans:
    start, end = actions[(e["pid"], e["args"]["within"])]
    assert start - 0.001 <= e["ts"] and e["ts"] + e["dur"] <= end + 0.001, (e, start, end)
PY
expect_status 2 "$run" train --model $gpt -K 2 -M 2 -N 4 --steps 1 --tensor-parallel 2
expect_one_error_line "--tensor-parallel 2 runs each rank's parts as processes: launch 4 processes under mpirun or srun"
expect_status 2 timeout 120 "${launch[@]}" -np 3 "$run" train --model $gpt -K 1 -M 2 -N 4 --steps 1 --tensor-parallel 3
ours; grep -qF "tensor-parallel 3 does not divide the 4 attention heads" "$tmp/ours" ||
  fail "tensor parallel: heads: $(cat "$tmp/err")"
expect_status 2 timeout 120 "${launch[@]}" -np 2 "$run" train --model $gpt -K 2 -M 2 -N 4 --steps 1 --tensor-parallel 2
ours; grep -qF "the schedule has 2 ranks of 2 parts but mpirun started 2 processes: launch 2 x 2 x 1 = 4" "$tmp/ours" ||
  fail "tensor parallel: the launch's size: $(cat "$tmp/err")"

# gpipe-run profile under mpirun -np 2 measures the link between the processes
# (a ping-pong from 8 B to 64 MiB, then the messages of the model's own K=2
# pipeline, to which the link is fitted), and rank 0 alone writes the profile.
expect_status 0 timeout 120 "${launch[@]}" -np 2 "$run" profile --model $mlp --micro-batch-sizes 1,2 \
  --warmup 0 --repeats 1 --out "$tmp/prof.json"
# Latency and bandwidth come from the pipeline's messages; the bandwidth
# alone when their fitted latency is below the ping-pong's; or, when a
# message is no slower than the latency (this model's are small, and a loaded
# machine's timings jitter), the ping-pong's line with a note saying so.
pipeline_fit='the median message of a K=2 gpipe pipeline of the model at micro-batch sizes 1,2 (3 runs)'
if grep -q "note: the ping-pong's bandwidth is kept: " "$tmp/err"; then
  summary='fitted to MPI ping-pong between ranks 0 and 1 '
elif grep -q "fitted to latency: " "$tmp/out"; then
  summary="fitted to latency: MPI ping-pong between ranks 0 and 1 .*; bandwidth: $pipeline_fit"
else
  summary="fitted to $pipeline_fit"
fi
[ "$(grep -c "$summary" "$tmp/out")" -eq 1 ] || fail "expected rank 0's summary alone: $(cat "$tmp/out")"
grep -q "link in a K=2 pipeline, b=2: median message" "$tmp/err" || fail "no pipeline line: $(cat "$tmp/err")"
python3 - "$tmp/prof.json" <<'PY' || fail "the measured link: $(head -c 600 "$tmp/prof.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
link = doc["link"]
# The other process polls a core while rank 0 profiles: no contention is measured under mpirun.
assert "contention" not in doc, doc["contention"]
points = link["measured"]["points"]
assert [p["bytes"] for p in points] == [8 << i for i in range(24)], points  # 8 B .. 64 MiB
assert all(p["one_way_us"] > 0 for p in points)
assert link["latency_us"] >= 0 and link["bandwidth_GBps"] > 0
with_ = link["measured"]["with"]
assert with_.startswith("latency: MPI ping-pong between ranks 0 and 1 on one node") or \
    with_.startswith("the median message of a K=2 gpipe pipeline"), with_
# The pipeline's messages: an activation of b x 16 fp32 values at each size.
pipeline = link["measured"]["pipeline_points"]
assert [p["bytes"] for p in pipeline] == [64, 128], pipeline
assert all(p["one_way_us"] > 0 for p in pipeline), pipeline
PY
# --link-fit ping-pong: the idle ping-pong alone, as before.
expect_status 0 timeout 120 "${launch[@]}" -np 2 "$run" profile --model $mlp --micro-batch-sizes 1 \
  --warmup 0 --repeats 1 --link-fit ping-pong --out "$tmp/pp.json"
expect_out "fitted to MPI ping-pong between ranks 0 and 1 on one node"
python3 -c 'import json,sys; assert "pipeline_points" not in json.load(open(sys.argv[1]))["link"]["measured"]' \
  "$tmp/pp.json" || fail "--link-fit ping-pong kept pipeline points"
"$sim" run --profile "$tmp/prof.json" -K 2 -M 2 -N 2 >/dev/null 2>&1 || fail "gpipe-sim does not read the measured link"
expect_status 0 "$run" profile --model $mlp --micro-batch-sizes 1 --warmup 0 --repeats 1 --out "$tmp/p1.json"
expect_out "under mpirun -np 2 the link between processes is measured"

# gpipe-run validate --launcher mpirun: the profile (with the link) measured
# under mpirun, each configuration trained as K processes and compared.
expect_status 0 timeout 300 "$run" validate --model $mlp -K 2 -M 2,4 -N 8 --schedule 1f1b --steps 2 \
  --launcher mpirun --warmup 0 --repeats 1 --out "$tmp/val.csv"
expect_out "profile     measured now by \`mpirun -np 2"
# The pipeline's fit, or (its messages no slower than the latency on a
# loaded machine: the launched profile's note stays in its own stderr) the
# ping-pong's line.
grep -q "note: the ping-pong's bandwidth is kept: " "$tmp/err" || grep -q "; link .* fitted to MPI ping-pong between ranks 0 and 1" "$tmp/out" ||
  expect_out "the median message of a K=2 gpipe pipeline"
# The profile and its link again before each later round, the rows from their median.
grep -q "validate: round 3 of 3: the profile again" "$tmp/err" || fail "no profile in round 3: $(cat "$tmp/err")"
expect_out "the profile is measured before each round and every row predicted from the median of the 3"
expect_out "^1f1b   never         2    4 "
expect_out "^link model: 12 transfers of .* to .*, mean .*; a message.s |error|: median "  # 2 + 2 x 2 messages at M = 2, 2 x 2 x 2 at M = 4
python3 - "$tmp/val.csv" <<'PY' || fail "validate's CSV: $(cat "$tmp/val.csv")"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["microbatches"] for r in rows] == ["2", "4"] and all(r["status"] == "ok" for r in rows), rows
assert [r["transfers"] for r in rows] == ["4", "8"], rows
assert all(float(r["measured_transfer_us"]) > 0 and r["peak_activation_equal"] == "1" for r in rows), rows
PY
# With data parallelism: K = 1 x D = 2 processes a configuration, the
# profile's link with the all-reduce's fit, each reduction compared.
expect_status 0 timeout 300 "$run" validate --model $mlp -K 1 -M 1,2 -N 4 --steps 2 --rounds 1 \
  --launcher mpirun --data-parallel 2 --warmup 0 --repeats 1 --out "$tmp/dp.csv" --save-profile "$tmp/dp-prof.json"
expect_out "batch 4 in each of 2 replicas"
expect_out "^collectives: 2 data-parallel reductions, mean .* predicted against .* measured"
python3 - "$tmp/dp.csv" "$tmp/dp-prof.json" <<'PY' || fail "validate --data-parallel: $(cat "$tmp/dp.csv")"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [(r["data_parallel"], r["reductions"]) for r in rows] == [("2", "1"), ("2", "1")], rows
assert all(float(r["predicted_reduction_us"]) > 0 and float(r["measured_reduction_us"]) > 0 for r in rows), rows
collective = json.load(open(sys.argv[2]))["link"]["collective"]
assert collective["latency_us"] >= 0 and collective["bandwidth_GBps"] > 0, collective
PY
# With ZeRO 1: the reductions reduce-scatters, priced with the profile's own
# reduce-scatter fit, and the CSV says the stage.
expect_status 0 timeout 300 "$run" validate --model $mlp -K 1 -M 1 -N 4 --steps 2 --rounds 1 --launcher mpirun \
  --data-parallel 2 --zero 1 --warmup 0 --repeats 1 --out "$tmp/zero.csv" --save-profile "$tmp/zero-prof.json"
expect_out "batch 4 in each of 2 replicas, ZeRO 1"
python3 - "$tmp/zero.csv" "$tmp/zero-prof.json" <<'PY' || fail "validate --zero 1: $(cat "$tmp/zero.csv")"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [(r["status"], r["zero"], r["reductions"]) for r in rows] == [("ok", "1", "1")], rows
assert all(float(r["measured_reduction_us"]) > 0 and float(r["predicted_reduction_us"]) > 0 for r in rows), rows
collective = json.load(open(sys.argv[2]))["link"]["collective"]
assert collective["reduce_scatter"]["bandwidth_GBps"] > 0 and collective["all_gather"]["bandwidth_GBps"] > 0, collective
PY
expect_status 2 "$run" validate --model $mlp -K 1 -M 1 -N 4 --zero 1 --launcher mpirun
expect_one_error_line "--zero 1 shards over the data-parallel group: give --data-parallel 2 or more"
# With tensor parallelism: the profile measured as one rank's 2 parts
# (tensor_parallel 2, a block's parameters half the whole's), each
# configuration trained as K x 2 processes.
expect_status 0 timeout 300 "$run" validate --model $gpt -K 1 -M 1,2 -N 4 --steps 2 --rounds 1 \
  --launcher mpirun --tensor-parallel 2 --warmup 0 --repeats 1 --out "$tmp/tp.csv" --save-profile "$tmp/tp-prof.json"
expect_out "batch 4, each rank's blocks split over 2 processes"
expect_out "^collectives: [0-9]* actions' tensor-parallel all-reduces, mean "
expect_out "peak activation equal to the prediction in 2 of 2 configurations"
python3 - "$tmp/tp.csv" "$tmp/tp-prof.json" <<'PY' || fail "validate --tensor-parallel: $(cat "$tmp/tp.csv")"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["status"] for r in rows] == ["ok", "ok"], rows
# Each F and B's all-reduces, predicted by the collectives' model against the run's.
assert all(r["tensor_parallel"] == "2" and int(r["tp_collective_actions"]) > 0 for r in rows), rows
assert all(float(r["predicted_tp_collective_us"]) > 0 and float(r["measured_tp_collective_us"]) > 0 for r in rows), rows
profile = json.load(open(sys.argv[2]))
assert profile["tensor_parallel"] == 2, profile.get("tensor_parallel")
blocks = {l["name"]: l["param_bytes"] for l in profile["layers"]}
# transformer hidden 32, ffn 128: a block's 12 H^2 + 13 H weights and biases; the part holds
# Wqkv, bqkv, Wo, W1, b1, W2 halved, the norms, bo and b2 whole.
h, f = 32, 128
whole_split = 3 * h * h + 3 * h + h * h + f * h + f + h * f
kept_whole = 4 * h + h + h
assert blocks["block0"] == 4 * (whole_split // 2 + kept_whole), blocks
PY
expect_status 2 "$run" validate --model $gpt -K 1 -M 1 -N 4 --tensor-parallel 2
expect_one_error_line "--tensor-parallel 2 runs each rank's parts as processes: give --launcher mpirun"
expect_status 2 timeout 120 "${launch[@]}" -np 3 "$run" profile --model $gpt --micro-batch-sizes 1 --tensor-parallel 2 \
  --out "$tmp/x.json"
ours; grep -qF -- "--tensor-parallel 2 profiles one rank's 2 parts, one process each: start it with --backend cpu under mpirun -np 2" "$tmp/ours" ||
  fail "profile --tensor-parallel: the launch's size: $(cat "$tmp/err")"
expect_status 2 "$run" validate --model $mlp -K 1 -M 1 -N 4 --data-parallel 2
expect_one_error_line "--data-parallel 2 runs each configuration's replicas as processes: give --launcher mpirun"
expect_status 2 "$run" validate --model $mlp -K 1 --workload inference --micro-batch-sizes 1 --data-parallel 2 \
  --launcher mpirun
expect_one_error_line "an inference stream has no gradients to reduce"
expect_status 2 "$run" validate --model $mlp -K 2 -M 2 -N 8 --launcher "srun -n 2"
expect_one_error_line "--launcher 'srun -n 2': a prefix must say where the process count goes, as {K}"
expect_status 2 "$run" validate --model $mlp -K 2 -M 2 -N 8 --launcher mpirun --backend cuda
expect_one_error_line "--launcher runs the cpu backend's ranks as processes"
# A launcher that fails: its last words, exit 1.
expect_status 1 "$run" validate --model $mlp -K 2 -M 2 -N 8 --launcher "false {K}" --warmup 0 --repeats 1
expect_one_error_line "measuring the profile: \`false 2 "

# One process per rank: a launch of another size is one error line, exit 2.
expect_status 2 timeout 120 "${launch[@]}" -np 3 "$run" train --model $mlp -K 2 -M 4 -N 8 --steps 1
ours
[ "$(wc -l <"$tmp/ours")" -eq 1 ] || fail "expected one line of ours: $(cat "$tmp/err")"
grep -q "the schedule has 2 ranks but mpirun started 3 processes" "$tmp/ours" || fail "$(cat "$tmp/err")"

# A fault in rank 1: each process says so, naming rank 1 and the action.
"${launch[@]}" -np 2 timeout 120 "$run" train --model $mlp -K 2 -M 4 -N 8 --steps 3 --schedule 1f1b \
  --inject-fault 1:1F2 >"$tmp/out" 2>"$tmp/err"
[ $? -ne 0 ] || fail "mpirun exited 0 after an injected fault"
ours
[ "$(grep -c 'rank 1 failed in 1F2: injected fault' "$tmp/ours")" -eq 2 ] ||
  fail "expected a line from each process: $(cat "$tmp/err")"

# A stall in rank 1: its watchdog names it, and the other process stops for it.
start=$(date +%s)
"${launch[@]}" -np 2 timeout 120 "$run" train --model $mlp -K 2 -M 4 -N 8 --steps 3 --schedule 1f1b \
  --inject-fault 1:1B1:stall --watchdog-seconds 1 >"$tmp/out" 2>"$tmp/err"
[ $? -ne 0 ] || fail "mpirun exited 0 after a stall"
[ $(($(date +%s) - start)) -lt 60 ] || fail "a stall took over 60 s to end"
ours
[ "$(grep -c 'stalled: no action finished for .* rank 1 in 1B1 (injected stall)' "$tmp/ours")" -eq 2 ] ||
  fail "expected a line from each process naming the stall: $(cat "$tmp/err")"

# Rank 1's process killed from outside: mpirun ends the other, which says where it was.
"${launch[@]}" -np 2 timeout 120 "$run" train --model $mlp -K 2 -M 4 -N 8 --steps 1000000 --seed 97531 \
  >"$tmp/out" 2>"$tmp/err" &
launcher=$!
for _ in $(seq 100); do grep -q '^step 2/' "$tmp/out" && break; sleep 0.2; done
victim=$(pgrep -f -- "--seed 97531" | while read -r p; do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && echo "$p"; done | head -1)
if [ -z "$victim" ]; then
  fail "could not find rank 1's process"
  kill "$launcher"
else
  kill -9 "$victim"
fi
wait "$launcher"
[ $? -ne 0 ] || fail "mpirun exited 0 after a process was killed"
ours
# Where rank 0 was when the kill came: in one of its actions, or at the step
# barrier between two steps (rank 1 died first; 1 run in ~6 sees this).
grep -q "stopped by SIGTERM from outside .*; rank 0 \(\(waits \)\?in 0\|waits at the start of step [0-9]\)" "$tmp/ours" ||
  fail "rank 0's process did not say where it was: $(cat "$tmp/err")"

finish "gpipe-run train under mpirun"
