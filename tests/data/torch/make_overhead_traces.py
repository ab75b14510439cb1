"""Writes the PyTorch profiler traces that torch's runtime is measured and
checked on (issue 43: torch-pp's overhead as a cost model), with the torch
that runs it (a scratch virtual environment outside the project: torch is a
yardstick and a source of traces, never a dependency of gpipe):

  python tests/data/torch/make_overhead_traces.py --layers 2 --hidden 32 --heads 2 NAME OUT_DIR

The model is a GPT of that shape (sequence 16, vocab 64: make_traces.py's
Embed, Blocks and Head with the loss; make_pipeline_traces.py's Logits and
loss in the pipeline), trained on the
CPU, fp32, seed 0, batch 8. For each, with a record_function label around
each layer ("layer0", ... : no stacks, whose Python tracing slows every call)
and three recorded steps after a warm-up one (ProfilerStep#N spans):

  NAME_b1.json.gz, NAME_b2.json.gz
                               one process, one thread, AdamW, micro-batch 1
                               and 2, record_shapes and profile_memory: what
                               gpipe-sim profile --from-torch-trace reads
  NAME_gpipe_rank{0,1}.json.gz torch.distributed.pipelining's ScheduleGPipe on
                               2 processes (gloo, one thread each), M = 4 of 2,
                               the layers halved between the two stages
  NAME_interleaved_rank{0,1}.json.gz
                               ScheduleInterleaved1F1B, 4 stages (2 a rank),
                               the layers in four equal runs
  NAME_interleaved.csv         torch's own schedule of that run (_dump_csv)

Each rank enters a barrier before each step, and SGD steps outside the
schedule. The traces are gzip (torch's export_chrome_trace writes x.json.gz so;
gpipe reads them as they are). The files are never edited by hand.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe, ScheduleInterleaved1F1B
from torch.profiler import ProfilerActivity, profile, record_function, schedule

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_pipeline_traces as pipe  # noqa: E402  (the logits, the loss and a pipeline step)
import make_traces as gpt  # noqa: E402  (the model's modules, at any width)

SEQ, VOCAB, BATCH, MICROBATCHES, STEPS = gpt.SEQ, gpt.VOCAB, 8, 4, 3


class Labelled(nn.Module):
    """A layer inside a record_function label: the layers without stacks."""

    def __init__(self, label, inner):
        super().__init__()
        self.label, self.inner = label, inner

    def forward(self, *args):
        with record_function(self.label):
            return self.inner(*args)


def layers(args, with_loss):
    out = [gpt.Embed(args.hidden)] + [gpt.Block(args.hidden, args.heads) for _ in range(args.layers)]
    out.append(gpt.Head(args.hidden) if with_loss else pipe.Logits(args.hidden))
    return [Labelled(f"layer{i}", m) for i, m in enumerate(out)]


class Model(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.layers = nn.ModuleList(layers(args, with_loss=True))

    def forward(self, tokens, targets):
        x = tokens
        for layer in self.layers[:-1]:
            x = layer(x)
        return self.layers[-1](x, targets)


def one_process(args, batch, path):
    torch.manual_seed(0)
    model = Model(args)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, VOCAB, (batch, SEQ), dtype=torch.int32)
    targets = torch.randint(0, VOCAB, (batch, SEQ), dtype=torch.int32)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True,
                 schedule=schedule(wait=0, warmup=1, active=STEPS, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(1 + STEPS):
            opt.zero_grad(set_to_none=True)
            model(tokens, targets).backward()
            opt.step()
            prof.step()


def model_arguments(parser, port):
    """The model's shape and the first rendezvous port, as every script of these runs takes them."""
    parser.add_argument("--layers", type=int, required=True)
    parser.add_argument("--hidden", type=int, required=True)
    parser.add_argument("--heads", type=int, required=True)
    parser.add_argument("--port", type=int, default=port)


def stages_and_runner(args, kind, rank):
    """This rank's stages and torch's schedule of them: GPipe on 2 stages (the
    layers halved), or interleaved 1F1B on 4 (four equal runs, the last taking the rest)."""
    all_layers = layers(args, with_loss=False)
    n = len(all_layers)
    if kind == "gpipe":
        half = n // 2
        mine = all_layers[:half] if rank == 0 else all_layers[half:]
        stage = PipelineStage(nn.Sequential(*mine), rank, 2, torch.device("cpu"))
        return [stage], ScheduleGPipe(stage, MICROBATCHES, loss_fn=pipe.loss_fn)
    quarter = n // 4
    runs = [all_layers[s * quarter:(s + 1) * quarter if s < 3 else n] for s in range(4)]
    stages = [PipelineStage(nn.Sequential(*runs[s]), s, 4, torch.device("cpu")) for s in (rank, rank + 2)]
    return stages, ScheduleInterleaved1F1B(stages, MICROBATCHES, loss_fn=pipe.loss_fn)


def pipeline(rank, args, kind, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    stages, runner = stages_and_runner(args, kind, rank)
    params = [p for s in stages for p in s.submod.parameters()]
    if kind == "interleaved" and rank == 0:
        runner._dump_csv(os.path.join(args.out, f"{args.name}_interleaved.csv"))
    opt = torch.optim.SGD(params, lr=1e-3)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ), dtype=torch.int32)
    targets = torch.randint(0, VOCAB, (BATCH, SEQ), dtype=torch.int32)
    path = os.path.join(args.out, f"{args.name}_{kind}_rank{rank}.json.gz")
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=STEPS, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(1 + STEPS):
            pipe.pipeline_step(runner, opt, rank, tokens, targets)
            prof.step()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    model_arguments(parser, port=29541)
    parser.add_argument("name")
    parser.add_argument("out")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)
    for batch in (1, 2):
        one_process(args, batch, os.path.join(args.out, f"{args.name}_b{batch}.json.gz"))
    for i, kind in enumerate(("gpipe", "interleaved")):
        mp.spawn(pipeline, args=(args, kind, args.port + i), nprocs=2)


if __name__ == "__main__":
    main()
