#!/usr/bin/env bash
# gpipe-run infer under mpirun, one stage per process, as a user runs it: the
# same outputs, bit for bit, as the stream of threads; the last stage's
# process alone reports; the trace's clock is named; an open-loop stream
# waits for its arrivals; validate --launcher serves its grid this way; a
# launch that does not fit is one error line.
# Exit 77 (skipped) where there is no mpirun or this gpipe-run has no MPI.
# Usage: run_infer_mpi_test.sh GPIPE_SIM GPIPE_RUN
set -u
run=$2
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mpi_lib.sh"
model=llama:layers=2,hidden=32,heads=4,kv_heads=2,ffn=48,seq=16,vocab=64

expect_status 0 "$run" infer --model "$model" -K 2 -b 2 -R 12 -B 2 --json
cp "$tmp/out" "$tmp/threads.json"
expect_status 0 timeout 120 "${launch[@]}" -np 2 "$run" infer --model "$model" -K 2 -b 2 -R 12 -B 2 --json \
  --trace "$tmp/mpi.json"
skip_without_mpi
python3 - "$tmp/threads.json" "$tmp/out" "$tmp/mpi.json" <<'PY' || fail "under mpirun: $(head -c 600 "$tmp/out")"
import json, sys
threads, processes = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))  # one JSON: one reporter
assert len(processes["outputs"]) == 12 and all(len(o) == 2 for o in processes["outputs"])
assert processes["outputs"] == threads["outputs"], "the outputs differ from the threads' stream"
m = processes["metrics"]
assert len(m["ranks"]) == 2 and m["requests"] == 12, m
assert m["ranks"][0]["peak_activation_bytes"] > 0 and m["ranks"][1]["peak_activation_bytes"] > 0, m["ranks"]
assert m["latency_us"]["p50"] > 0, m["latency_us"]
trace = json.load(open(sys.argv[3]))
assert trace["otherData"]["clock"] == {"method": "shared monotonic clock (one node)", "max_error_ns": 0}
recv = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e["args"].get("kind") == "RECV_F"]
assert len(recv) == 12, len(recv)
PY

# Text, open loop: the last item arrives at 5 x 4 ms, so the stream takes longer.
expect_status 0 timeout 120 "${launch[@]}" -np 2 "$run" infer --model "$model" -K 2 -R 6 --arrival-interval-us 4000
expect_out "^where       cpu: one process per rank (2 processes, mpirun), MPI between ranks"
[ "$(grep -c '^model ' "$tmp/out")" -eq 1 ] || fail "more than one process reported: $(cat "$tmp/out")"
step_ms=$(sed -n 's/^step time   \([0-9.]*\) ms.*/\1/p' "$tmp/out")
python3 -c "import sys; sys.exit(0 if float('${step_ms:-0}') >= 20 else 1)" ||
  fail "an open-loop stream of 6 items 4 ms apart took ${step_ms:-?} ms: $(cat "$tmp/out")"

# validate --workload inference --launcher: each configuration served as K
# processes, predicted from a forward-only profile measured under the launcher
# with its link; K = 1 runs as one process.
expect_status 0 timeout 280 "$run" validate --workload inference --model "$model" --stages 1,2 --in-flight 2 \
  --micro-batch-sizes 2 --requests 8 --rounds 1 --repeats 1 --warmup 0 --launcher mpirun --out "$tmp/validate.csv"
expect_out "^profile     measured now by \`mpirun -np 2 .*gpipe-run profile\`"
expect_out "^2 configurations: 2 run, 0 skipped"
expect_out "^peak activation equal to the prediction on every rank in "
[ "$(wc -l <"$tmp/validate.csv")" -eq 3 ] || fail "validate CSV: $(cat "$tmp/validate.csv")"

# One process per stage, or one line saying so, exit 2.
expect_status 2 timeout 120 "${launch[@]}" -np 3 "$run" infer --model "$model" -K 2 -R 4
grep '^gpipe-run' "$tmp/err" >"$tmp/ours"
[ "$(wc -l <"$tmp/ours")" -eq 1 ] || fail "expected one line of ours: $(cat "$tmp/err")"
grep -q "error: --stages 2 but mpirun started 3 processes: launch one process per stage" "$tmp/ours" ||
  fail "no launch line: $(cat "$tmp/err")"
finish run_infer_mpi_test
