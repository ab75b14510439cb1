#!/usr/bin/env bash
# gpipe-run profile under mpirun (the link between processes measured, rank 0
# writing the profile) and gpipe-run validate --launcher mpirun (each
# configuration trained as processes, with data and tensor parallelism and
# ZeRO 1), and what each cannot run, in one line, exit 2.
# Exit 77 (skipped) where there is no mpirun or this gpipe-run has no MPI.
# Usage: run_validate_mpi_test.sh GPIPE_SIM GPIPE_RUN
set -u
sim=$1
run=$2
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mpi_lib.sh"

mlp=mlp:layers=4,hidden=16
gpt=transformer:layers=3,hidden=32,heads=4,seq=16,vocab=64

# gpipe-run profile under mpirun -np 2 measures the link between the processes
# (a ping-pong from 8 B to 64 MiB, then the messages of the model's own K=2
# pipeline, to which the link is fitted), and rank 0 alone writes the profile.
expect_status 0 timeout 120 "${launch[@]}" -np 2 "$run" profile --model $mlp --micro-batch-sizes 1,2 \
  --warmup 0 --repeats 1 --out "$tmp/prof.json"
skip_without_mpi
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

finish "gpipe-run profile and validate under mpirun"
