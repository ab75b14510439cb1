#!/usr/bin/env bash
# scripts/transfer_floor.py on a trace made here, of known message times: both
# medians exact, and bad input one line with exit 2.
# Usage: transfer_floor_test.sh GPIPE_SIM GPIPE_RUN (unused: the script is Python)
source "$(dirname "$0")/lib.sh"
floor=scripts/transfer_floor.py

# K = 2, M = 3, batch 6: three activations, rank 0 to 1, that took 100, 110
# and 130 us once both sides were there; three gradients back, 200, 250, 400.
# Nothing computes meanwhile, so each direction is one group of the oracle too.
# Per direction the median (110, 250) is off by 10, 0, 15.4 % and 25, 0, 37.5 %:
# the median of the six is 12.7 %.
/usr/bin/python3 - "$tmp/trace.json" <<'PY'
import json, sys
events = []
def put(pid, kind, stage, mb, ts, dur):
    name = f"{stage}{kind}{mb}"
    events.append({"ph": "X", "cat": "comm", "pid": pid, "tid": 2, "name": name, "ts": ts, "dur": dur,
                   "args": {"kind": kind, "stage": stage, "microbatch": mb}})
for mb, took in enumerate([100, 110, 130]):
    put(0, "SEND_F", 0, mb, 1000 * mb, 1)
    put(1, "RECV_F", 1, mb, 1000 * mb + 10, took)  # the receiver comes later: from its start
for mb, took in enumerate([200, 250, 400]):
    put(1, "SEND_B", 1, mb, 10000 + 1000 * mb + 50, 1)  # the sender comes later: from the send's start
    put(0, "RECV_B", 0, mb, 10000 + 1000 * mb, took + 50)
trace = {"traceEvents": events, "otherData": {"gpipe": {"batch_size": 6, "schedule": {"num_microbatches": 3}}}}
json.dump(trace, open(sys.argv[1], "w"))
PY

expect_status 0 "$floor" "$tmp/trace.json"
expect_out "best constant per micro-batch size and direction: 6 messages, median |error| 12.7 %"
expect_out "oracle per trace, size, direction and sender's action: 6 messages, median |error| 12.7 %"

expect_status 2 "$floor"
expect_one_error_line "usage: transfer_floor.py TRACE.json"
expect_status 2 "$floor" "$tmp/missing.json"
expect_one_error_line "missing.json: No such file or directory"
echo '{"traceEvents": []}' >"$tmp/bare.json"
expect_status 2 "$floor" "$tmp/bare.json"
expect_one_error_line "bare.json: not a trace of gpipe-run train"

finish transfer_floor_test
