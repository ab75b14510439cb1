"""Writes PyTorch profiler traces of several training steps, taken the ways
users take them, which gpipe's importer must split into steps (or refuse in
one line), with the torch that runs it (a scratch virtual environment outside
the project: torch is a yardstick and a source of traces, never a dependency
of gpipe):

  python tests/data/torch/make_step_traces.py tests/data/torch

The model is make_traces.py's GPT (Embed, Block_0, Block_1, Head with the
loss), micro-batch 1, one CPU thread, AdamW, seed 0. Each trace records 4
training steps after one warm-up step, with record_shapes (and
profile_memory in the first):

  steps_unmarked.json  the ordinary way: with_stack=True (module events), no
                       prof.step(), so no ProfilerStep#N spans
  steps_marked.json    the same under a schedule (warmup 1, active 4) with
                       prof.step() after each step: ProfilerStep#N spans
  steps_labels.json    no stacks (so no module events): a record_function
                       label around each layer (layer0 to layer3), no
                       prof.step()

The files are never edited by hand; tests that need a bad trace edit a copy.
"""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_traces as gpt  # noqa: E402  (the model's modules)

STEPS = 4


class Labelled(gpt.GPT):
    """The same GPT with a record_function label around each layer."""

    def forward(self, tokens, targets):
        with record_function("layer0"):
            x = self.embed(tokens)
        for i, block in enumerate(self.blocks):
            with record_function(f"layer{i + 1}"):
                x = block(x)
        with record_function(f"layer{len(self.blocks) + 1}"):
            return self.head(x, targets)


def trace(path, labels=False, marked=False):
    torch.manual_seed(0)
    model = Labelled() if labels else gpt.GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, gpt.VOCAB, (1, gpt.SEQ), dtype=torch.int32)
    targets = torch.randint(0, gpt.VOCAB, (1, gpt.SEQ), dtype=torch.int32)

    def train_step():
        opt.zero_grad(set_to_none=True)
        model(tokens, targets).backward()
        opt.step()

    # Memory events in the ordinary trace only: the others' steps are read the same way.
    options = dict(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=not (labels or marked),
                   with_stack=not labels)
    if marked:
        # torch writes ProfilerStep#N spans only under a schedule: the warm-up
        # step is its warmup, and it exports the 4 active steps.
        with profile(schedule=schedule(wait=0, warmup=1, active=STEPS, repeat=1),
                     on_trace_ready=lambda p: p.export_chrome_trace(path), **options) as prof:
            for _ in range(1 + STEPS):
                train_step()
                prof.step()
        return
    train_step()  # warm-up, outside the profiler
    with profile(**options) as prof:
        for _ in range(STEPS):
            train_step()
    prof.export_chrome_trace(path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_step_traces.py OUT_DIR")
    out = sys.argv[1]
    torch.set_num_threads(1)
    os.makedirs(out, exist_ok=True)
    trace(os.path.join(out, "steps_unmarked.json"))
    trace(os.path.join(out, "steps_marked.json"), marked=True)
    trace(os.path.join(out, "steps_labels.json"), labels=True)


if __name__ == "__main__":
    main()
