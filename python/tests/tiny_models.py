"""Small user-style modules the bridge tests export (importable as `tiny_models:<builder>`)."""

import torch
import torch.nn as nn


class Block(nn.Module):
    """Pre-norm transformer block: causal nn.MultiheadAttention and a GELU MLP."""

    def __init__(self, seq, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.register_buffer("mask", torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=self.mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    """GPT-style: token embedding + learned positions, blocks, final norm, head tied to the
    token table."""

    def __init__(self, vocab=64, seq=16, d=32, heads=4, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(seq, d) * 0.02)
        self.blocks = nn.Sequential(*[Block(seq, d, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx):
        return self.head(self.norm(self.blocks(self.tok(idx) + self.pos)))


class TwiceLinear(nn.Module):
    """One nn.Linear called twice (its parameters are shared by both calls)."""

    def __init__(self, d=33):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.out = nn.Linear(d, 2)

    def forward(self, x):
        return self.out(torch.relu(self.fc(torch.relu(self.fc(x)))))


def tinylm():
    return TinyLM()


def twice_linear():
    return TwiceLinear()


class TinyLMPositions(TinyLM):
    """TinyLM with an nn.Embedding of positions (GPT-2's wte + wpe) instead of a parameter."""

    def __init__(self, vocab=64, seq=16, d=32, heads=4, layers=2):
        super().__init__(vocab, seq, d, heads, layers)
        del self.pos
        self.wpe = nn.Embedding(seq, d)
        self.register_buffer("positions", torch.arange(seq))

    def forward(self, idx):
        x = self.tok(idx) + self.wpe(self.positions)
        return self.head(self.norm(self.blocks(x)))


def tinylm_positions():
    return TinyLMPositions()
