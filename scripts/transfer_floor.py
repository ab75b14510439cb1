#!/usr/bin/python3
"""How well could any link model predict these messages? The floor of the per-message error.

Reads Chrome traces that `gpipe-run train --trace` wrote under a launcher (one step, every rank),
takes each message's time as `gpipe-sim diff` does (from the later of its SEND's and RECV's start
to the RECV's end), and prints two medians of |predicted - measured| / measured:

  - the best constant per message size and direction, over every trace given: what a link fitted
    perfectly to these very runs would score;
  - an oracle that predicts each message by the median of its own group (same trace, size,
    direction, and action its sender computed meanwhile; groups of 3 or more): a model that knew
    each run's speed and each message's context could do no better than about this.

Usage: scripts/transfer_floor.py TRACE.json [TRACE.json ...]
"""
import json
import statistics
import sys
from collections import defaultdict


def messages(path):
    """(micro-batch size, direction F or B, the sender's compute kinds meanwhile, took us) per message.

    A trace names no message's bytes; for one model they follow the micro-batch size, the batch over M.
    """
    with open(path) as f:
        trace = json.load(f)
    info = trace["otherData"]["gpipe"]
    size = info["batch_size"] / info["schedule"]["num_microbatches"]
    events = [e for e in (trace["traceEvents"] if isinstance(trace, dict) else trace) if e.get("ph") == "X"]
    compute = defaultdict(list)
    sends = {}
    for e in events:
        kind = e["args"]["kind"]
        if e.get("cat") == "compute":
            compute[e["pid"]].append(e)
        elif kind.startswith("SEND"):
            sends[(kind[-1], e["args"]["stage"], e["args"]["microbatch"])] = e
    for e in events:
        kind = e["args"]["kind"]
        if not kind.startswith("RECV"):
            continue
        way = kind[-1]
        stage = e["args"]["stage"] + (-1 if way == "F" else 1)
        send = sends[(way, stage, e["args"]["microbatch"])]
        start, end = max(send["ts"], e["ts"]), e["ts"] + e["dur"]
        beside = sorted({c["args"]["kind"] for c in compute[send["pid"]]
                         if c["ts"] < end and c["ts"] + c["dur"] > start})
        yield size, way, tuple(beside), end - start


def median_error(groups, least=1):
    errors = []
    for took in groups.values():
        if len(took) < least:
            continue
        centre = statistics.median(took)
        errors += [abs(t - centre) / t for t in took]
    return len(errors), 100 * statistics.median(errors) if errors else float("nan")


def fail(message):
    print(f"transfer_floor.py: {message}", file=sys.stderr)
    sys.exit(2)


def main(paths):
    if not paths:
        fail("usage: transfer_floor.py TRACE.json [TRACE.json ...]")
    by_size, by_context = defaultdict(list), defaultdict(list)
    for path in paths:
        try:
            for size, way, beside, took in messages(path):
                by_size[(size, way)].append(took)
                by_context[(path, size, way, beside)].append(took)
        except OSError as e:
            fail(f"{path}: {e.strerror}")
        except (ValueError, KeyError, TypeError, ZeroDivisionError) as e:
            fail(f"{path}: not a trace of gpipe-run train ({type(e).__name__}: {e})")
    if not by_size:
        fail("no messages in these traces (a run of one rank sends none)")
    n, e = median_error(by_size)
    print(f"best constant per micro-batch size and direction: {n} messages, median |error| {e:.1f} %")
    n, e = median_error(by_context, least=3)
    print(f"oracle per trace, size, direction and sender's action: {n} messages, median |error| {e:.1f} %")


if __name__ == "__main__":
    main(sys.argv[1:])
