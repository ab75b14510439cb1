"""Writes the PyTorch profiler traces gpipe's torch importers are tested on,
with the torch that runs it; run it with an interpreter that has
torch (a scratch virtual environment outside the project: torch is a
yardstick and a source of traces, never a dependency of gpipe):

  python tests/data/torch/make_traces.py tests/data/torch
  python tests/data/torch/make_traces.py --device cuda OUT_DIR   (on a GPU)

The model is gpipe's transformer:layers=2,hidden=32,heads=2,seq=16,vocab=64
(the bench GPT of tests/bench/torch_gpt.py, small; the modules take other
widths too, for make_overhead_traces.py), written as the modules
gpipe's layers are: Embed (token and position tables), Block_0 and Block_1
(pre-LN blocks), Head (final LayerNorm, unembedding, cross-entropy). It trains
on one CPU thread, fp32, AdamW, random int32 tokens, seed 0; the profiler
warms up one step and records the next three (schedule wait=0, warmup=1, active=3),
so that each layer's median shrugs off one step's stall, with
record_shapes, profile_memory and with_stack, and the trace is exported as
Kineto's Chrome JSON:

  gpt_cpu_b{B}.json   micro-batch sizes B = 1 and 2
  (and versions.json: the torch and Python versions, and the command)

With --device cuda the same model trains on the GPU, fp32 (TF32 off), and
the profiler records the CUDA activities too (kernels, memcpys, runtime
calls): gpt_cuda_b{B}.json and versions_cuda.json, which names the GPU.

The files are never edited by hand; tests that need a bad trace edit a copy.
"""
import json
import os
import platform
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, schedule

LAYERS, HIDDEN, HEADS, SEQ, VOCAB = 2, 32, 2, 16, 64
SPEC = f"transformer:layers={LAYERS},hidden={HIDDEN},heads={HEADS},seq={SEQ},vocab={VOCAB}"


class Embed(nn.Module):
    def __init__(self, hidden=HIDDEN):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, hidden)
        self.pos = nn.Embedding(SEQ, hidden)

    def forward(self, tokens):
        return self.tok(tokens) + self.pos(torch.arange(SEQ, device=tokens.device))


class Block(nn.Module):
    def __init__(self, hidden=HIDDEN, heads=HEADS):
        super().__init__()
        self.hidden, self.heads = hidden, heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.fc2 = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(self.hidden, dim=2)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / (h // self.heads) ** 0.5
        mask = torch.triu(torch.ones(s, s, dtype=torch.bool, device=x.device), 1)
        att = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
        x = x + self.proj(att.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class Head(nn.Module):
    def __init__(self, hidden=HIDDEN):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.unembed = nn.Linear(hidden, VOCAB, bias=False)

    def forward(self, x, targets):
        logits = self.unembed(self.ln(x))
        return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1).long())


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = Embed()
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.head = Head()

    def forward(self, tokens, targets):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(x, targets)


def trace(batch, path, device="cpu"):
    torch.manual_seed(0)
    model = GPT().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, VOCAB, (batch, SEQ), dtype=torch.int32).to(device)
    targets = torch.randint(0, VOCAB, (batch, SEQ), dtype=torch.int32).to(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities, record_shapes=True, profile_memory=True, with_stack=True,
                 schedule=schedule(wait=0, warmup=1, active=3, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(4):
            opt.zero_grad(set_to_none=True)
            model(tokens, targets).backward()
            opt.step()
            prof.step()


def main():
    args = sys.argv[1:]
    device = "cpu"
    if args[:1] == ["--device"] and len(args) >= 2:
        device = args[1]
        args = args[2:]
    if len(args) != 1 or device not in ("cpu", "cuda"):
        sys.exit("usage: make_traces.py [--device cpu|cuda] OUT_DIR")
    out = args[0]
    torch.set_num_threads(1)
    versions = {"torch": torch.__version__, "python": platform.python_version(), "model": SPEC}
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        versions["device"] = torch.cuda.get_device_name(0)
        versions["cuda"] = torch.version.cuda
    os.makedirs(out, exist_ok=True)
    for batch in (1, 2):
        trace(batch, os.path.join(out, f"gpt_{device}_b{batch}.json"), device)
    versions["command"] = "python tests/data/torch/make_traces.py " + " ".join(sys.argv[1:])
    name = "versions.json" if device == "cpu" else f"versions_{device}.json"
    with open(os.path.join(out, name), "w") as f:
        json.dump(versions, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
