"""Trains a small byte-level MoE language model on the CPU and records its expert loads with
hecate_capture.py. Run with Debian's python3-torch:

    /usr/bin/python3 scripts/capture/train_tiny_moe.py --aux 0.01 --steps 400 -o traces/pytorch-moe-aux.json
    /usr/bin/python3 scripts/capture/train_tiny_moe.py --aux 0    --steps 400 -o traces/pytorch-moe-noaux.json

Model: 4 blocks (causal self-attention + an MoE FFN of 8 experts, top-2 softmax gating), d_model 64,
byte vocabulary. Corpus: Python's standard-library sources shipped by Debian (/usr/lib/python3.11),
real English-and-code text available offline. Balance loss: Switch-Transformer style
aux = E * sum_e f_e * P_e (f = fraction of routed assignments, P = mean router probability), times --aux.
Each step's batch is split into 4 shards recorded as 4 sources (what 4 data-parallel ranks would route).
"""
import argparse
import glob
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hecate_capture import ExpertLoadRecorder  # noqa: E402


class Router(nn.Module):
    def __init__(self, d, experts, k):
        super().__init__()
        self.gate = nn.Linear(d, experts, bias=False)
        self.k = k

    def forward(self, x):
        probs = F.softmax(self.gate(x), dim=-1)
        weights, idx = probs.topk(self.k, dim=-1)
        return probs, weights, idx


class MoE(nn.Module):
    def __init__(self, d, experts, k):
        super().__init__()
        self.router = Router(d, experts, k)
        self.experts = nn.ModuleList([nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d)) for _ in range(experts)])
        self.e = experts

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        probs, w, idx = self.router(x)
        out = torch.zeros_like(x)
        for e in range(self.e):
            tok, slot = (idx == e).nonzero(as_tuple=True)
            if tok.numel():
                out.index_add_(0, tok, self.experts[e](x[tok]) * w[tok, slot].unsqueeze(-1))
        f = torch.bincount(idx.reshape(-1), minlength=self.e).float() / idx.numel()
        aux = self.e * (f * probs.mean(0)).sum()
        return out.reshape(shape), aux


class Block(nn.Module):
    def __init__(self, d, heads, experts, k):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.moe = MoE(d, experts, k)

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        y, aux = self.moe(self.ln2(x))
        return x + y, aux


class TinyMoELM(nn.Module):
    def __init__(self, d=64, layers=4, heads=4, experts=8, k=2, seq=64):
        super().__init__()
        self.emb = nn.Embedding(256, d)
        self.pos = nn.Parameter(torch.zeros(seq, d))
        self.blocks = nn.ModuleList([Block(d, heads, experts, k) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, 256)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, x):
        h = self.emb(x) + self.pos[: x.shape[1]]
        aux = 0.0
        for b in self.blocks:
            h, a = b(h, self.mask[: x.shape[1], : x.shape[1]])
            aux = aux + a
        return self.head(self.ln(h)), aux


def corpus(limit_bytes):
    files = sorted(glob.glob("/usr/lib/python3.11/*.py"))
    data = bytearray()
    for p in files:
        with open(p, "rb") as f:
            data += f.read()
        if len(data) >= limit_bytes:
            break
    return torch.tensor(list(data[:limit_bytes]), dtype=torch.long), len(files)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--aux", type=float, default=0.01)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    data, nfiles = corpus(4_000_000)
    model = TinyMoELM(seq=a.seq)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    rec = ExpertLoadRecorder(num_experts=8, top_k=2, sources=4, provenance={
        "script": "scripts/capture/train_tiny_moe.py", "corpus": "/usr/lib/python3.11/*.py (Python standard library, first 4 MB)",
        "steps": a.steps, "batch": a.batch, "seq": a.seq, "aux_loss_coef": a.aux, "seed": a.seed,
        "torch": torch.__version__, "model": "4 blocks, d_model 64, 8 experts top-2 (hidden 128), byte vocabulary"})
    for layer, blk in enumerate(model.blocks):
        rec.attach(blk.moe.router, layer, extract=lambda m, i, out: out[2])
    gen = torch.Generator().manual_seed(a.seed)
    t0 = time.time()
    for step in range(a.steps):
        starts = torch.randint(0, len(data) - a.seq - 1, (a.batch,), generator=gen)
        x = torch.stack([data[s: s + a.seq] for s in starts])
        y = torch.stack([data[s + 1: s + a.seq + 1] for s in starts])
        logits, aux = model(x)
        loss = F.cross_entropy(logits.reshape(-1, 256), y.reshape(-1))
        (loss + a.aux * aux).backward()
        opt.step()
        opt.zero_grad()
        rec.step(step)
        if step % 100 == 0 or step == a.steps - 1:
            print(f"step {step} loss {loss.item():.3f} aux {float(aux):.3f} ({time.time() - t0:.0f} s)", file=sys.stderr)
    rec.write(a.out)


if __name__ == "__main__":
    main()
