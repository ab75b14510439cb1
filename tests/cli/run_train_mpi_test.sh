#!/usr/bin/env bash
# gpipe-run train --backend cpu under mpirun, one rank per process, as a user
# runs it: the same losses as the run of threads, the reporter alone printing,
# one trace on one clock; with two stages a process, a tied embedding, data
# parallelism, ZeRO 1 and tensor parallelism, and what each cannot run.
# (Failures: run_faults_mpi_test.sh; profile and validate: run_validate_mpi_test.sh and
# run_validate_parallel_mpi_test.sh.)
# Exit 77 (skipped) where there is no mpirun or this gpipe-run has no MPI.
# Usage: run_train_mpi_test.sh GPIPE_SIM GPIPE_RUN
set -u
sim=$1
run=$2
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mpi_lib.sh"

mlp=mlp:layers=4,hidden=16
expect_status 0 "$run" train --model $mlp -K 2 -M 4 -N 8 --steps 3 --schedule 1f1b
grep '^step [0-9]' "$tmp/out" >"$tmp/threads"
expect_status 0 timeout 120 "${launch[@]}" -np 2 "$run" train --model $mlp -K 2 -M 4 -N 8 --steps 3 \
  --schedule 1f1b --trace "$tmp/mpi.json"
skip_without_mpi
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

# Context parallelism: each sequence over 2 processes (K = 2: 4 in all), the
# losses the threads' run's to the last digit; one reporter.
cp_llama=llama:layers=4,hidden=32,heads=4,kv_heads=2,ffn=48,seq=32,vocab=64
expect_status 0 "$run" train --model $cp_llama -K 2 -M 2 -N 4 --steps 3
grep '^step [0-9]' "$tmp/out" >"$tmp/threads"
expect_status 0 timeout 120 "${launch[@]}" -np 4 "$run" train --model $cp_llama -K 2 -M 2 -N 4 --steps 3 \
  --context-parallel 2 --trace "$tmp/cp-trace.json"
expect_out "context par. each sequence split over 2 processes (16 tokens each: chunks i and 3-i of 4)"
grep '^step [0-9]' "$tmp/out" >"$tmp/processes"
cmp -s "$tmp/threads" "$tmp/processes" || fail "context parallel: losses differ from the threads' run: $(cat "$tmp/threads" "$tmp/processes")"
[ "$(grep -c '^model ' "$tmp/out")" -eq 1 ] || fail "context parallel: more than one process reported: $(cat "$tmp/out")"
# Its trace shows each block's keys and values gathered in every F, and
# gathered again and their gradients reduce-scattered in every B, on the
# rank's context-parallel lane: the 4 blocks over the 2 ranks, each
# collective b x seq x 2 (G / T) d fp32 = 2 x 32 x 32 x 4 bytes whole.
python3 - "$tmp/cp-trace.json" <<'PY' || fail "context parallel: the trace's collectives"
import collections, json, sys
trace = json.load(open(sys.argv[1]))
assert trace["otherData"]["gpipe"]["context_parallel"] == 2
spans = [e for e in trace["traceEvents"] if e.get("cat") == "collective"]
assert spans and all(e["args"]["over"] == "context-parallel" and e["args"]["bytes"] == 8192 for e in spans), spans[:3]
kinds = collections.Counter((e["pid"], e["args"]["within"], e["name"]) for e in spans)
blocks = {r: kinds[(r, f"{r}F0", "all-gather")] for r in (0, 1)}
assert sum(blocks.values()) == 4, kinds
for (r, within, name), n in kinds.items():
    forward = within[1] == "F"
    assert name in (("all-gather",) if forward else ("all-gather", "reduce-scatter")), (r, within, name)
    assert n == blocks[r], (r, within, name, n, blocks)
assert {w[1] for (_, w, _) in kinds} == {"F", "B"}, kinds
lanes = {(e["pid"], e["args"]["name"]) for e in trace["traceEvents"] if e.get("name") == "thread_name"}
assert (0, "context-parallel") in lanes and (1, "context-parallel") in lanes, lanes
PY
# A failure names the member too (each member of rank 1 injects the fault).
expect_status 1 timeout 120 "${launch[@]}" -np 4 "$run" train --model $cp_llama -K 2 -M 2 -N 4 --steps 2 \
  --context-parallel 2 --inject-fault 1:1F1
ours; grep -qE "rank 1 \(replica 0, part 0, member [01]\) failed in 1F1: injected fault" "$tmp/ours" ||
  fail "context parallel: the failure line: $(cat "$tmp/err")"
expect_status 2 "$run" train --model $cp_llama -K 2 -M 2 -N 4 --steps 1 --context-parallel 2
expect_one_error_line "--context-parallel 2 runs each rank's share of a sequence as a process: launch 4 processes under mpirun or srun"
expect_status 2 "$run" train --model $gpt,attn=flash -K 1 -M 2 -N 4 --steps 1 --context-parallel 2
expect_one_error_line "--context-parallel 2: the executor splits the llama family's sequences, not layer embed (embedding)"
# With tensor parallelism too: K x C x T = 1 x 2 x 2 processes, the same losses.
expect_status 0 "$run" train --model $cp_llama -K 1 -M 2 -N 4 --steps 3
grep '^step [0-9]' "$tmp/out" >"$tmp/threads"
expect_status 0 timeout 120 "${launch[@]}" -np 4 "$run" train --model $cp_llama -K 1 -M 2 -N 4 --steps 3 \
  --context-parallel 2 --tensor-parallel 2
expect_out "tensor par. each rank's blocks split over 2 processes"
expect_out "context par. each sequence split over 2 processes"
grep '^step [0-9]' "$tmp/out" >"$tmp/processes"
cmp -s "$tmp/threads" "$tmp/processes" || fail "context and tensor parallel: losses differ: $(cat "$tmp/threads" "$tmp/processes")"
expect_status 2 "$run" train --model $cp_llama -K 1 -M 2 -N 4 --steps 1 --context-parallel 3
expect_one_error_line "--context-parallel 3: 2C = 6 does not divide the sequence of 32"
expect_status 2 timeout 120 "${launch[@]}" -np 2 "$run" train --model $cp_llama -K 2 -M 2 -N 4 --steps 1 --context-parallel 2
ours; grep -qF "the schedule has 2 ranks of 2 parts but mpirun started 2 processes: launch 2 x 2 x 1 = 4" "$tmp/ours" ||
  fail "context parallel: the launch's size: $(cat "$tmp/err")"

finish "gpipe-run train under mpirun"
