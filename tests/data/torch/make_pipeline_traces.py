"""Writes PyTorch profiler traces of torch's own pipeline runs, which
gpipe reads as a measured timeline (`gpipe-sim diff PREDICTED --torch-traces`),
with the torch that runs it (a scratch virtual environment outside the project:
torch is a yardstick and a source of traces, never a dependency of gpipe):

  python tests/data/torch/make_pipeline_traces.py tests/data/torch

The model is make_traces.py's GPT at transformer:layers=2,hidden=32,heads=2,
seq=16,vocab=64 (Embed, Block_0, Block_1, and the final LayerNorm and
unembedding; the loss is torch.distributed.pipelining's loss_fn), trained by
torch.distributed.pipelining on 2 CPU processes (gloo, one thread each),
batch 8 in M = 4 micro-batches, SGD outside the schedule:
  - ScheduleGPipe, 2 stages (Embed + Block_0 | Block_1 + head);
  - ScheduleInterleaved1F1B, 4 stages of one layer each, 2 per rank.
Each rank enters a barrier before each step (the run's record of one moment on
every clock) and the profiler warms up one step and records the next (or,
for the _steps traces, records four):

  pipe_gpipe_rank{0,1}.json, pipe_interleaved_rank{0,1}.json
  pipe_interleaved_steps_rank{0,1}.json
                         the interleaved run profiled the ordinary way: a
                         profiler around 4 steps after a warm-up one, no
                         prof.step() (so no ProfilerStep#N spans)
  pipe_interleaved.csv   torch's own schedule of the interleaved run, actions
                         and transfers (_dump_csv, compute_comms), which gpipe
                         predicts with --schedule-file

The files are never edited by hand; tests that need a bad trace edit a copy.
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe, ScheduleInterleaved1F1B
from torch.profiler import ProfilerActivity, profile, schedule

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_traces as gpt  # noqa: E402  (the model's modules)

MICROBATCHES, BATCH = 4, 8


class Logits(nn.Module):
    def __init__(self, hidden=gpt.HIDDEN):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.unembed = nn.Linear(hidden, gpt.VOCAB, bias=False)

    def forward(self, x):
        return self.unembed(self.ln(x))


def loss_fn(logits, targets):
    return F.cross_entropy(logits.reshape(-1, gpt.VOCAB), targets.reshape(-1).long())


def pipeline_step(pipe, opt, rank, tokens, targets):
    """One training step of a 2-rank run: a barrier first (the run's record of
    one moment on every clock), the schedule, then SGD outside it."""
    opt.zero_grad(set_to_none=True)
    dist.barrier()
    if rank == 0:
        pipe.step(tokens)
    else:
        pipe.step(target=targets)
    opt.step()


def run(rank, out, kind, port, steps):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layers = [gpt.Embed(), gpt.Block(), gpt.Block(), Logits()]
    if kind == "gpipe":
        stage = PipelineStage(nn.Sequential(*layers[2 * rank:2 * rank + 2]), rank, 2, torch.device("cpu"))
        pipe = ScheduleGPipe(stage, MICROBATCHES, loss_fn=loss_fn)
        params = stage.submod.parameters()
    else:
        stages = [PipelineStage(nn.Sequential(layers[s]), s, 4, torch.device("cpu")) for s in (rank, rank + 2)]
        pipe = ScheduleInterleaved1F1B(stages, MICROBATCHES, loss_fn=loss_fn)
        params = [p for s in stages for p in s.submod.parameters()]
        if rank == 0:
            pipe._dump_csv(os.path.join(out, "pipe_interleaved.csv"))
    opt = torch.optim.SGD(params, lr=1e-3)
    tokens = torch.randint(0, gpt.VOCAB, (BATCH, gpt.SEQ), dtype=torch.int32)
    targets = torch.randint(0, gpt.VOCAB, (BATCH, gpt.SEQ), dtype=torch.int32)
    def train_step():
        pipeline_step(pipe, opt, rank, tokens, targets)

    if steps > 1:
        # The ordinary way: a warm-up step, then a profiler around `steps` steps, no prof.step().
        path = os.path.join(out, f"pipe_{kind}_steps_rank{rank}.json")
        train_step()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(steps):
                train_step()
        prof.export_chrome_trace(path)
        dist.destroy_process_group()
        return
    path = os.path.join(out, f"pipe_{kind}_rank{rank}.json")
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=1, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(2):
            train_step()
            prof.step()
    dist.destroy_process_group()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_pipeline_traces.py OUT_DIR")
    for kind, port, steps in (("gpipe", 29531, 1), ("interleaved", 29532, 1), ("interleaved", 29533, 4)):
        mp.spawn(run, args=(sys.argv[1], kind, port, steps), nprocs=2)


if __name__ == "__main__":
    main()
