"""Times torch.distributed.pipelining's own actions with and without its profiler, to see what a
profiled pipeline run costs that an unprofiled one does not (issue 43: torch's runtime as a cost).
Run with the torch of a scratch virtual environment (never a dependency of gpipe):

  python tests/data/torch/time_pipeline_actions.py --layers 6 --hidden 96 --heads 4

The model and the runs are make_overhead_traces.py's (GPipe on 2 stages, interleaved 1F1B on 4, 2
processes under gloo, one thread each, M = 4 of 2 samples). For each schedule, unprofiled then
under torch.profiler (CPU activity, as make_overhead_traces.py records it), 10 steps after 3
warm-up ones: each rank's median forward_one_chunk and backward_one_chunk (wall clock around
torch's own calls), the median step, and the process's minor page faults and system time over the
10 steps. Alone, one process: the median forward and backward of each half of the model, for the
compute a stage does without any runtime. Prints one line each; writes nothing.
"""
import argparse
import os
import resource
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_overhead_traces as ov  # noqa: E402  (the model and its labels)
import make_pipeline_traces as pipe  # noqa: E402  (the loss and a pipeline step)
import make_traces as gpt  # noqa: E402

WARMUP, STEPS = 3, 10


def median_us(values):
    return sorted(values)[len(values) // 2] * 1e6


def timed(stage, times):
    """Wraps the stage's own forward and backward of one micro-batch in a wall clock."""
    for name, kind in (("forward_one_chunk", "F"), ("backward_one_chunk", "B")):
        inner = getattr(stage, name)

        def wrapper(*args, _inner=inner, _kind=kind, **kwargs):
            start = time.perf_counter()
            out = _inner(*args, **kwargs)
            times[_kind].append(time.perf_counter() - start)
            return out

        setattr(stage, name, wrapper)


def pipeline(rank, args, kind, profiled, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    stages, runner = ov.stages_and_runner(args, kind, rank)
    times = {"F": [], "B": []}
    for stage in stages:
        timed(stage, times)
    opt = torch.optim.SGD([p for s in stages for p in s.submod.parameters()], lr=1e-3)
    tokens = torch.randint(0, gpt.VOCAB, (ov.BATCH, gpt.SEQ), dtype=torch.int32)
    targets = torch.randint(0, gpt.VOCAB, (ov.BATCH, gpt.SEQ), dtype=torch.int32)
    steps = []

    def run(count):
        for _ in range(count):
            start = time.perf_counter()
            pipe.pipeline_step(runner, opt, rank, tokens, targets)
            steps.append(time.perf_counter() - start)

    run(WARMUP)
    per_step = len(times["F"]) // WARMUP
    before = resource.getrusage(resource.RUSAGE_SELF)
    if profiled:
        with profile(activities=[ProfilerActivity.CPU]):
            run(STEPS)
    else:
        run(STEPS)
    after = resource.getrusage(resource.RUSAGE_SELF)
    skip = per_step * WARMUP
    print(f"{kind:11s} {'profiled' if profiled else 'plain':8s} rank {rank}: F {median_us(times['F'][skip:]):6.0f} us, "
          f"B {median_us(times['B'][skip:]):6.0f} us, step {median_us(steps[WARMUP:]) / 1e3:6.2f} ms; "
          f"{after.ru_minflt - before.ru_minflt} minor faults, system {after.ru_stime - before.ru_stime:.3f} s "
          f"over {STEPS} steps", flush=True)
    dist.destroy_process_group()


def alone(args):
    torch.manual_seed(0)
    layers = ov.layers(args, with_loss=False)
    n = len(layers)
    tokens = torch.randint(0, gpt.VOCAB, (ov.BATCH // ov.MICROBATCHES, gpt.SEQ), dtype=torch.int32)
    targets = torch.randint(0, gpt.VOCAB, (ov.BATCH // ov.MICROBATCHES, gpt.SEQ), dtype=torch.int32)
    first, second = nn.Sequential(*layers[:n // 2]), nn.Sequential(*layers[n // 2:])
    hidden = first(tokens).detach()
    for name, module, x in (("first half", first, tokens), ("second half", second, hidden)):
        forward, backward = [], []
        for _ in range(WARMUP + 4 * STEPS):
            x_in = x.clone().requires_grad_() if x.is_floating_point() else x
            start = time.perf_counter()
            y = module(x_in)
            forward.append(time.perf_counter() - start)
            loss = pipe.loss_fn(y, targets) if module is second else y.sum()
            start = time.perf_counter()
            loss.backward()
            backward.append(time.perf_counter() - start)
        print(f"alone       {name}: F {median_us(forward[WARMUP:]):6.0f} us, B {median_us(backward[WARMUP:]):6.0f} us",
              flush=True)


def main():
    parser = argparse.ArgumentParser()
    ov.model_arguments(parser, port=29561)
    args = parser.parse_args()
    torch.set_num_threads(1)
    alone(args)
    port = args.port
    for kind in ("gpipe", "interleaved"):
        for profiled in (False, True):
            mp.spawn(pipeline, args=(args, kind, profiled, port), nprocs=2)
            port += 1


if __name__ == "__main__":
    main()
