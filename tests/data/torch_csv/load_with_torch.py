#!/usr/bin/env python3
"""Loads schedule CSV files with PyTorch's own reader, to check that what
gpipe-sim writes is what torch reads (run by hand, never in CI; torch is a
yardstick here, not a dependency):

    /work/torch-venv/bin/python tests/data/torch_csv/load_with_torch.py FILE.csv ...

A file with comm actions is read as torch's runtime reads a lowered schedule,
_PipelineScheduleRuntime._load_csv(FILE, format="compute_comms"); a
compute-only one with _load_csv(FILE) (format="compute_only"), which torch
then validates (_validate_schedule) and lowers itself. K is the number of
lines, the stage count and M the largest indices plus one. Prints one line
per file and exits 1 if torch refused any.
"""
import csv
import re
import sys
from unittest import mock

from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime
from torch.distributed.pipelining.stage import PipelineStage

COMM = re.compile(r"\d+(SEND|RECV|WAIT_SEND)_[FB]\d+")
ACTION = re.compile(r"(\d+)[A-Z_]+?(\d*)$")


def shape(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    stages, microbatches, comms = 0, 0, False
    for row in rows:
        for cell in row:
            for part in cell.strip("()").split(")")[0].split(";") if cell.startswith("(") else [cell]:
                part = part.strip()
                if not part:
                    continue
                comms = comms or bool(COMM.fullmatch(part))
                stage, mb = ACTION.match(part).groups()
                stages = max(stages, int(stage) + 1)
                if mb:
                    microbatches = max(microbatches, int(mb) + 1)
    return len(rows), stages, microbatches, comms


def load(path):
    ranks, stages, microbatches, comms = shape(path)
    stage = mock.create_autospec(PipelineStage, instance=True)
    stage.group_rank = 0
    stage.group_size = ranks
    stage.submod = None
    stage.num_stages = stages
    runtime = _PipelineScheduleRuntime([stage] * (stages // ranks), microbatches)
    fmt = "compute_comms" if comms else "compute_only"
    runtime._load_csv(path, format=fmt)
    actions = sum(len(runtime.pipeline_order_with_comms[r]) for r in range(ranks))
    return f"K={ranks} stages={stages} M={microbatches} {fmt}, {actions} actions with torch's comms"


failed = False
for path in sys.argv[1:]:
    try:
        print(f"{path}: torch reads it ({load(path)})")
    except Exception as e:  # torch raises AssertionError, ValueError, RuntimeError
        failed = True
        print(f"{path}: torch refuses it: {type(e).__name__}: {str(e).splitlines()[0]}")
sys.exit(1 if failed else 0)
