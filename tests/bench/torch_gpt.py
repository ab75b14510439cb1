"""PyTorch eager yardstick for gpipe's CPU executor: the GPT of
gpipe's transformer spec, trained whole steps (forward, backward, AdamW) on
random tokens, fp32. Torch is a yardstick, never a dependency: run this with
an interpreter that has it (a scratch virtual environment outside the project);
scripts/compare-torch runs it beside tests/bench/train_bench.
  transformer:layers=L,hidden=H,heads=A,seq=S (vocab 256): token and position
  embedding, L pre-LN blocks with biases (LN, QKV, causal attention, proj; LN,
  4H MLP with tanh GELU), final LN, unembedding without bias, cross-entropy.
Usage: python torch_gpt.py L H A S BATCH THREADS [STEPS] [ATTENTION]
ATTENTION: explicit (default: q k^T, mask, softmax, times v, as written out
in GPT-2) or sdpa (torch's fused F.scaled_dot_product_attention, causal).
Prints samples/s over STEPS steps after 2 warm-up steps."""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

L, H, A, S, BATCH, THREADS = (int(v) for v in sys.argv[1:7])
STEPS = int(sys.argv[7]) if len(sys.argv) > 7 else 10
ATTENTION = sys.argv[8] if len(sys.argv) > 8 else "explicit"
if ATTENTION not in ("explicit", "sdpa"):
    sys.exit(f"torch_gpt.py: ATTENTION is explicit or sdpa, not {ATTENTION}")
VOCAB = 256
torch.set_num_threads(THREADS)
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(H)
        self.qkv = nn.Linear(H, 3 * H)
        self.proj = nn.Linear(H, H)
        self.ln2 = nn.LayerNorm(H)
        self.fc1 = nn.Linear(H, 4 * H)
        self.fc2 = nn.Linear(4 * H, H)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(H, dim=2)
        q, k, v = (t.view(b, s, A, H // A).transpose(1, 2) for t in (q, k, v))
        if ATTENTION == "sdpa":
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / (H // A) ** 0.5
            mask = torch.triu(torch.ones(s, s, dtype=torch.bool), 1)
            att = scores.masked_fill(mask, float('-inf')).softmax(-1) @ v
        x = x + self.proj(att.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate='tanh'))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, H)
        self.pos = nn.Embedding(S, H)
        self.blocks = nn.Sequential(*[Block() for _ in range(L)])
        self.ln = nn.LayerNorm(H)
        self.head = nn.Linear(H, VOCAB, bias=False)

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos(torch.arange(S))
        return self.head(self.ln(self.blocks(x)))


model = GPT()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
tokens = torch.randint(0, VOCAB, (BATCH, S))
targets = torch.randint(0, VOCAB, (BATCH, S))


def step():
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(tokens).view(-1, VOCAB), targets.view(-1))
    loss.backward()
    opt.step()


for _ in range(2):
    step()
start = time.perf_counter()
for _ in range(STEPS):
    step()
elapsed = time.perf_counter() - start
print(f"torch {torch.__version__} threads {THREADS} ({ATTENTION} attention): {BATCH * STEPS / elapsed:.1f} samples/s "
      f"({elapsed / STEPS * 1e3:.1f} ms/step)")
