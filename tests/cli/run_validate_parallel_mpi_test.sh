#!/usr/bin/env bash
# gpipe-run validate --launcher mpirun with data parallelism, ZeRO 1, tensor
# and context parallelism (each configuration's replicas and parts as processes,
# their collectives compared), and what validate cannot run, in one line.
# Exit 77 (skipped) where there is no mpirun or this gpipe-run has no MPI.
# Usage: run_validate_parallel_mpi_test.sh GPIPE_SIM GPIPE_RUN
set -u
sim=$1
run=$2
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mpi_lib.sh"

mlp=mlp:layers=4,hidden=16
gpt=transformer:layers=3,hidden=32,heads=4,seq=16,vocab=64

# One process, to learn whether this gpipe-run has MPI at all.
expect_status 0 timeout 120 "${launch[@]}" -np 1 "$run" train --model $mlp -K 1 -M 1 -N 1 --steps 1
skip_without_mpi

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
# The parts' all-reduces as the profiled blocks ran them.
fit = profile["link"]["tensor_collectives"]["all_reduce"]
assert fit["bandwidth_GBps"] > 0 and fit["latency_us"] >= 0, fit
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
# With context parallelism: the profile measured as one rank's 2 members
# (context_parallel 2, each block's stash at half the tokens), each
# configuration trained as K x 2 processes, the peaks equal to the prediction.
llama=llama:layers=2,hidden=32,heads=4,kv_heads=2,ffn=48,seq=32,vocab=64
expect_status 0 timeout 300 "$run" validate --model $llama -K 1 -M 1,2 -N 4 --steps 2 --rounds 1 \
  --launcher mpirun --context-parallel 2 --warmup 0 --repeats 1 --out "$tmp/cp.csv" --save-profile "$tmp/cp-prof.json"
expect_out "batch 4, each sequence split over 2 processes"
expect_out "peak activation equal to the prediction in 2 of 2 configurations"
python3 - "$tmp/cp.csv" "$tmp/cp-prof.json" <<'PY' || fail "validate --context-parallel: $(cat "$tmp/cp.csv")"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["status"] for r in rows] == ["ok", "ok"], rows
# One replica, each sequence over 2 processes: the gradient group D x C = 2,
# one reduction a stage, predicted and measured.
assert all(r["data_parallel"] == "1" and r["context_parallel"] == "2" and r["reductions"] == "1" for r in rows), rows
assert all(float(r["predicted_reduction_us"]) > 0 and float(r["measured_reduction_us"]) > 0 for r in rows), rows
# Each action's context-parallel collectives, predicted and measured: the 2
# blocks' F and B of every micro-batch (M = 1, then 2) on the one rank.
assert [r["cp_collective_actions"] for r in rows] == ["2", "4"], rows
assert all(float(r["predicted_cp_collective_us"]) > 0 and float(r["measured_cp_collective_us"]) > 0 for r in rows), rows
assert all(r["tp_collective_actions"] == "0" for r in rows), rows
profile = json.load(open(sys.argv[2]))
assert profile["context_parallel"] == 2, profile.get("context_parallel")
# The members' all-gathers and reduce-scatters as the profiled blocks ran them.
fits = profile["link"]["context_collectives"]
assert set(fits) == {"all_gather", "reduce_scatter"}, fits
assert all(f["bandwidth_GBps"] > 0 and f["latency_us"] >= 0 for f in fits.values()), fits
PY
# With both groups: the profile measured as one rank's 2 parts of 2 members
# (4 processes), each configuration trained as K x 2 x 2, both groups'
# collectives compared apart.
expect_status 0 timeout 300 "$run" validate --model $llama -K 1 -M 1 -N 4 --steps 2 --rounds 1 --launcher mpirun \
  --tensor-parallel 2 --context-parallel 2 --warmup 0 --repeats 1 --out "$tmp/tc.csv" --save-profile "$tmp/tc-prof.json"
expect_out "batch 4, each sequence split over 2 members and each member's blocks over 2 processes"
expect_out "peak activation equal to the prediction in 1 of 1 configurations"
python3 - "$tmp/tc.csv" "$tmp/tc-prof.json" <<'PY' || fail "validate -T 2 -C 2: $(cat "$tmp/tc.csv")"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [(r["status"], r["tensor_parallel"], r["context_parallel"]) for r in rows] == [("ok", "2", "2")], rows
# The 2 blocks' F and B: each with the parts' all-reduces and the members' gathers.
assert [(r["tp_collective_actions"], r["cp_collective_actions"]) for r in rows] == [("2", "2")], rows
for kind in ("tp", "cp"):
    assert all(float(r[f"predicted_{kind}_collective_us"]) > 0 and float(r[f"measured_{kind}_collective_us"]) > 0
               for r in rows), rows
profile = json.load(open(sys.argv[2]))
assert (profile["tensor_parallel"], profile["context_parallel"]) == (2, 2), profile
assert set(profile["link"]["context_collectives"]) == {"all_gather", "reduce_scatter"}, profile["link"]
assert set(profile["link"]["tensor_collectives"]) == {"all_reduce"}, profile["link"]
# llama hidden 32, 4 heads of 8 (2 kv heads), ffn 48: a part holds half of
# Wq, Wk, Wv, Wo and of the three SwiGLU matrices, and both norms whole.
h, kv, f = 32, 16, 48
part = (h * h + 2 * kv * h + h * h + 3 * f * h) // 2 + 2 * h
blocks = {l["name"]: l["param_bytes"] for l in profile["layers"]}
assert blocks["block0"] == 4 * part, blocks
PY
expect_status 2 timeout 120 "${launch[@]}" -np 2 "$run" profile --model $llama --micro-batch-sizes 1 --context-parallel 2 \
  --tensor-parallel 2 --out "$tmp/x.json"
ours; grep -qF -- "--tensor-parallel 2 --context-parallel 2 profiles one rank's 2 parts of 2 members, one process each: start it with --backend cpu under mpirun -np 4" "$tmp/ours" ||
  fail "profile -T 2 -C 2: the launch's size: $(cat "$tmp/err")"
expect_status 2 "$run" validate --model $llama -K 1 --workload inference --micro-batch-sizes 1 --context-parallel 2 \
  --launcher mpirun
expect_one_error_line "--context-parallel 2: validate --workload inference serves each stage as one process; train and validate the split without --workload inference"
expect_status 2 "$run" validate --model $llama -K 1 -M 1 -N 4 --context-parallel 2
expect_one_error_line "--context-parallel 2 runs each rank's share of a sequence as a process: give --launcher mpirun"
expect_status 2 "$run" validate --model $gpt,attn=flash -K 1 -M 1 -N 4 --context-parallel 2 --launcher mpirun
expect_one_error_line "--context-parallel 2: the executor splits the llama family's sequences, not layer embed"
expect_status 2 timeout 120 "${launch[@]}" -np 3 "$run" profile --model $llama --micro-batch-sizes 1 --context-parallel 2 \
  --out "$tmp/x.json"
ours; grep -qF -- "--context-parallel 2 profiles one rank's 2 members, one process each: start it with --backend cpu under mpirun -np 2" "$tmp/ours" ||
  fail "profile --context-parallel: the launch's size: $(cat "$tmp/err")"
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

finish "gpipe-run validate with replicas and parts under mpirun"
