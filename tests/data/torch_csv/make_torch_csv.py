#!/usr/bin/env python3
"""Writes the torch-made schedule files of this folder with PyTorch itself (run
by hand, never in CI; torch is a yardstick here, not a dependency):

    /work/torch-venv/bin/python tests/data/torch_csv/make_torch_csv.py

Each file is what torch.distributed.pipelining (2.15) makes for that
schedule, written as its _dump_csv writes (csv.writer: one row per rank,
\\r\\n line ends). The "with comms" files come from torch's own lowering
(_PipelineScheduleRuntime._prepare_schedule_with_comms): RECVs posted early,
WAIT_SEND_F/B, UNSHARD/RESHARD, REDUCE_GRAD/WAIT_REDUCE_GRAD.
get_schedule_ops(..., with_comms=True) fails for torch's single-stage
schedules (1F1B) in 2.15, so for 1F1B the compute order (PipeDream-flush:
min(M, K-r) forwards, then one backward and one forward) is lowered by the
same runtime directly.
"""
import csv
import os
from unittest import mock

from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops
from torch.distributed.pipelining.schedules import _Action, _ComputationType, _PipelineScheduleRuntime
from torch.distributed.pipelining.stage import PipelineStage

HERE = os.path.dirname(os.path.abspath(__file__))


def one_f_one_b(k, m):
    order = {}
    for r in range(k):
        warmup = min(m, k - r)
        actions = [_Action(r, _ComputationType.FORWARD, i) for i in range(warmup)]
        f, b = warmup, 0
        while b < m:
            actions.append(_Action(r, _ComputationType.FULL_BACKWARD, b))
            b += 1
            if f < m:
                actions.append(_Action(r, _ComputationType.FORWARD, f))
                f += 1
        order[r] = actions
    return order


def lower_with_torch(order, k, m):
    stage = mock.create_autospec(PipelineStage, instance=True)
    stage.group_rank = 0
    stage.group_size = k
    stage.submod = None
    stage.num_stages = k
    runtime = _PipelineScheduleRuntime([stage], m)
    runtime._prepare_schedule_with_comms(order)
    return [list(runtime.pipeline_order_with_comms[r]) for r in range(k)]


def write(name, rows):
    with open(os.path.join(HERE, name), "w", newline="") as f:
        writer = csv.writer(f)
        for row in rows:
            writer.writerow(["" if a is None else str(a) for a in row])


write("dualpipev_k2_m4.csv", get_schedule_ops("DualPipeV", 2, 4, None))
write("dualpipev_k2_m4_comms.csv", get_schedule_ops("DualPipeV", 2, 4, None, with_comms=True))
write("interleaved_zb_k2_m4_v2_comms.csv",
      get_schedule_ops("InterleavedZeroBubble", 2, 4, 2, with_comms=True))
write("1f1b_k4_m8_comms.csv", lower_with_torch(one_f_one_b(4, 8), 4, 8))
