#!/usr/bin/env bash
# gpipe-run profile under mpirun (the link between processes measured, rank 0
# writing the profile) and gpipe-run validate --launcher mpirun (each
# configuration trained as K processes and compared). Data and tensor
# parallelism and ZeRO 1 under validate, and what it cannot run:
# run_validate_parallel_mpi_test.sh.
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

finish "gpipe-run profile and validate under mpirun"
