#!/usr/bin/env bash
# gpipe-sim run and sweep as a user runs them: the default profile, the
# table, --json, --trace, the sweep CSV, and one clear error line with exit 2
# for every bad input of docs/design.md's rule. Usage: gpipe_sim_run_test.sh GPIPE_SIM
set -u
sim=$1
source "$(dirname "$0")/lib.sh"
data=tests/data/profiles

# The default (shipped) profile needs no --profile.
expect_status 0 "$sim" run -K 4 -M 8 -N 32
expect_out "transformer-48L-h2048-h100.json (analytic, NVIDIA H100 80GB HBM3, bf16)"
expect_out "bubble          "
expect_out "analytic (K-1)/(M+K-1): 27.27 %"

# A hand-made profile: 2 layers, one per stage; --json carries docs/design.md's metric keys.
expect_status 0 "$sim" run --profile $data/valid_two_layers.json -K 2 -M 4 -N 8 --json --trace "$tmp/t.json"
for key in step_time_us bubble_fraction bubble_fraction_analytic throughput_samples_per_s busy_us \
           utilization peak_activation_bytes static_bytes; do
  expect_out "\"$key\""
done
[ -s "$tmp/t.json" ] || fail "--trace wrote nothing"
grep -qF '"displayTimeUnit":"ns"' "$tmp/t.json" || grep -qF '"displayTimeUnit": "ns"' "$tmp/t.json" \
  || fail "trace lacks displayTimeUnit"
# The trace of a prediction diffs against itself with no error.
expect_status 0 "$sim" diff "$tmp/t.json" "$tmp/t.json"
expect_status 0 "$sim" run --profile $data/valid_two_layers.json -K 2 -M 2 -b 3 --partition 1,1 \
  --schedule 1f1b --recompute always --link-latency-us 0 --link-bandwidth-gbps 1000 --optimizer sgd
expect_out "2 micro-batches of 3 samples (batch 6), recompute stage"
expect_out "one message at a time (fifo)"
# One command for a published configuration: the profile made in memory from --model on --device
# (or --cluster's device), split over --tensor-parallel.
expect_status 0 "$sim" run --model "transformer:layers=4,hidden=256,heads=4,seq=128,vocab=512" --cluster dgx-a100 \
  --tensor-parallel 2 -K 2 -M 4 -b 2 --data-parallel 2 --reduce-after-backward
expect_out "(made in memory) (analytic, NVIDIA A100-SXM4-80GB, bf16)"
expect_out "TP 2 x PP 2 x DP 2 = 8 GPUs"
expect_status 2 "$sim" run --model llama3-8b -K 2 -M 4 -N 4
expect_one_error_line "give --device, or --cluster"
expect_status 2 "$sim" run --model llama3-8b --device h100 --profile $data/valid_two_layers.json -K 2 -M 4 -N 4
expect_one_error_line "give --profile or --model, not both"
expect_status 2 "$sim" run --model llama3-8b --device h100 --workload inference -K 2
expect_one_error_line "--workload inference takes --profile"

# fp32 main gradients: the reduction says so and carries twice the bytes.
expect_status 0 "$sim" run --model "transformer:layers=4,hidden=256,heads=4,seq=128,vocab=512" --device a100 \
  -K 2 -M 4 -b 2 --data-parallel 2 --zero 1 --fp32-main-grads
expect_out "reduction   each stage's fp32 gradients over its 2 replicas"

# Module recompute is the model's (recompute=): the made profile's spec says it; with a split
# backward it is one error line.
expect_status 0 "$sim" run --model "transformer:layers=4,hidden=256,heads=4,seq=128,vocab=512,recompute=mlp+core_attn" \
  --device a100 -K 2 -M 4 -b 2
expect_out "recompute=core_attn+mlp (made in memory)"
expect_status 2 "$sim" run --model "llama3-8b:recompute=core_attn" --device h100 -K 2 -M 4 -b 1 --schedule zb-h1
expect_one_error_line "recompute=core_attn (the profile's model): schedule zb-h1 splits its backward"
expect_status 2 "$sim" run --model "llama3-8b:recompute=mlp" --device h100 -K 2 -M 4 -b 1 --schedule zb-auto
expect_one_error_line "--schedule zb-auto: the profile's model recomputes modules (recompute=mlp)"

# Megatron's full recompute on the default profile: said in the schedule line; its flags alone,
# or with a split backward, are one error line.
expect_status 0 "$sim" run -K 4 -M 8 -N 8 --recompute full --recompute-method block --recompute-num-layers 2
expect_out "recompute full (block, the first 2 blocks of each stage)"
expect_status 2 "$sim" run -K 4 -M 8 -N 8 --recompute-num-layers 2
expect_one_error_line "give --recompute full with them"
expect_status 2 "$sim" run -K 4 -M 8 -N 8 --schedule zb-h1 --recompute full
expect_one_error_line "splits its backward"
expect_status 2 "$sim" run -K 4 -M 8 -N 8 --recompute full --recompute-num-layers 0
expect_one_error_line "--recompute-num-layers"
expect_status 0 "$sim" run --profile $data/valid_two_layers.json -K 2 -M 2 -N 4 --link-sharing shared --json
expect_out '"sharing": "shared"'
expect_status 2 "$sim" run --profile $data/valid_two_layers.json -K 2 -M 2 -N 4 --link-sharing maybe
expect_one_error_line "--link-sharing"

# The sweep: rows for every configuration, skipped ones with their reason.
expect_status 0 "$sim" sweep --profile $data/valid_two_layers.json -K 1..3 -M 1,2,4 -N 2 \
  --schedule gpipe,1f1b --out "$tmp/sweep.csv" --json-out "$tmp/sweep.json" --memory-limit 1MB
expect_out "18 configurations: 8 simulated, 10 skipped (cannot exist)"
[ "$(wc -l <"$tmp/sweep.csv")" -eq 19 ] || fail "sweep.csv has $(wc -l <"$tmp/sweep.csv") lines, expected 19"
grep -qF 'gpipe,never,3,,1,,2,,skipped,--stages 3 exceeds the 2 layers of the profile' "$tmp/sweep.csv" \
  || fail "skipped row for K=3: $(cat "$tmp/sweep.csv")"
grep -qF '"status": "skipped"' "$tmp/sweep.json" || fail "sweep.json lacks skipped rows"
# run and sweep share the fixed flags: the link, its sharing, the optimizer.
expect_status 0 "$sim" sweep --profile $data/valid_two_layers.json -K 2 -M 2 -N 2 --link-sharing shared \
  --link-bandwidth-gbps 0.001 --optimizer sgd --backward-order forward
expect_status 2 "$sim" sweep --profile $data/valid_two_layers.json -K 2 -M 2 -N 2 --link-sharing maybe
expect_one_error_line "--link-sharing"

# zb-auto: the search, within --memory-limit (static + activations, per rank), in run and sweep.
expect_status 0 "$sim" run -K 4 -M 8 -N 8 --schedule zb-auto
expect_out "^searched    kept "
expect_status 0 "$sim" run -K 4 -M 8 -N 8 --schedule zb-auto --memory-limit 20GB --json
python3 - "$tmp/out" <<'PY' || fail "zb-auto within 20GB: $(cat "$tmp/out")"
import json, sys
out = json.load(open(sys.argv[1]))
assert out["config"]["schedule"] == "zb-auto" and out["config"]["searched"]
assert out["config"]["memory_limit_bytes"] == 20 * 10**9
for r in out["metrics"]["ranks"]:
    assert r["peak_activation_bytes"] + r["static_bytes"] <= 20 * 10**9, r
PY
expect_status 2 "$sim" run -K 4 -M 8 -N 8 --schedule zb-auto --memory-limit 12GB
expect_one_error_line "zb-auto: no schedule fits the memory limit"
# Other schedules are checked against a limit, not searched within it.
expect_status 0 "$sim" run -K 4 -M 8 -N 8 --schedule 1f1b --memory-limit 2GB
expect_out "memory      OVER the limit of 2.00 GB (--memory-limit): rank 0 needs "
expect_status 0 "$sim" run -K 4 -M 8 -N 8 --schedule 1f1b --memory-limit 200GB
expect_out "memory      every rank fits in 200.00 GB (--memory-limit)"
# The shipped profile is analytic: it knows its H100's 80 GB; a measured one does not.
expect_status 0 "$sim" run -K 4 -M 8 -N 8 --schedule 1f1b --memory-limit device
expect_out "memory      every rank fits in 81.24 GB (NVIDIA H100 80GB HBM3's 85.52 GB less 5 %)"
expect_status 2 "$sim" run --profile $data/design_example.json -K 2 -M 2 -N 4 --memory-limit device
expect_one_error_line "--memory-limit device: the profile does not say how much memory its device"
expect_status 2 "$sim" run -K 4 -M 8 -N 8 --schedule 1f1b --memory-limit 20XB
expect_one_error_line "--memory-limit"
expect_status 0 "$sim" sweep -K 2,4 -M 4,8 -N 8 --schedule 1f1b,zb-h1,zb-h2,zb-auto --memory-limit 40GB \
  --out "$tmp/zb.csv"
[ "$(grep -c '^zb-auto,never,[24],[12],[48],.*,ok,' "$tmp/zb.csv")" -eq 4 ] || fail "zb-auto sweep rows: $(cat "$tmp/zb.csv")"
expect_status 0 "$sim" sweep --help
expect_out "zb-auto"

# Bad input: one line naming the file, field or flag; exit 2.
expect_status 2 "$sim" run --profile "$tmp/none.json" -K 2 -M 2 -N 4
expect_one_error_line "--profile $tmp/none.json: no such file"
expect_status 2 "$sim" run --profile $data/invalid_not_json.json -K 1 -M 1 -N 1
expect_one_error_line "invalid_not_json.json: not valid JSON"
expect_status 2 "$sim" run --profile $data/invalid_fwd_us.json -K 1 -M 1 -N 1
expect_one_error_line "fwd_us"
expect_status 2 "$sim" run --profile $data/invalid_activation_below_input.json -K 1 -M 1 -N 1
expect_one_error_line "activation_bytes"
expect_status 2 "$sim" run --profile $data/valid_two_layers.json -K 3 -M 2 -N 4
expect_one_error_line "--stages 3 exceeds the 2 layers of the profile"
expect_status 2 "$sim" run --profile $data/valid_two_layers.json -K 2 -M 0 -N 4
expect_one_error_line "--microbatches"
expect_status 2 "$sim" run --profile $data/valid_two_layers.json -K 2 -M 8 -N 4
expect_one_error_line "--microbatches 8 exceeds --batch 4"
expect_status 2 "$sim" run --profile $data/valid_two_layers.json -K 2 -M 2 -N 4 --partition 1,2
expect_one_error_line "--partition 1,2 sums to 3 layers, the model has 2"
expect_status 2 "$sim" run --profile $data/valid_two_layers.json -K 2 -M 2 -N 4 --partition 2
expect_one_error_line "--partition"
expect_status 2 "$sim" run --profile $data/valid_two_layers.json -K 2 -M 2 -N 4 --schedule zb-h9
expect_one_error_line "--schedule"
expect_status 2 "$sim" run --profile $data/valid_two_layers.json -K 2 -M 2
expect_one_error_line "give --batch N or --micro-batch-size b"
expect_status 2 "$sim" run --profile $data/valid_two_layers.json -K 2 -M 2 -N 4 -b 2
expect_one_error_line "--batch"
expect_status 2 "$sim" run --profile $data/valid_two_layers.json -K 2 -M 2 -N 4 --trace /nonexistent/dir/t.json
expect_one_error_line "/nonexistent/dir/t.json: cannot write: No such file or directory"
expect_status 2 "$sim" sweep -K 1..x -M 1 -N 4
expect_one_error_line "--stages"
expect_status 2 "$sim" sweep -K 1 -M 1 -N 4 --schedule gpipe,zb
expect_one_error_line "--schedule: unknown value 'zb' (known: gpipe, 1f1b, "
expect_status 2 "$sim" sweep -K 1 -M 1 -N 4 --memory-limit lots
expect_one_error_line "--memory-limit 'lots'"
expect_status 0 "$sim" run --help
expect_out "--micro-batch-size"
expect_status 0 "$sim" sweep --help
expect_out "--memory-limit"

finish "gpipe-sim run/sweep"
