#!/usr/bin/env python3
"""PyTorch reference for the GPU device check (tools/gpu_check.sh).

GPT in the shape of Pipewright's zoo `gpt` (pre-norm blocks, biases on every projection, GELU
tanh, untied LM head without bias, learned positions, no dropout), written as a competent user
writes it (nanoGPT style: one fused qkv projection, scaled_dot_product_attention with
is_causal, fused AdamW), trained on random tokens. Reports the median step time of `--steps`
steps after `--warmup` steps for each mode:
  fp32     float32 matrix products, TF32 off
  tf32     float32 with TF32 tensor-core matrix products
  compile  torch.compile of the model, TF32 as --compile-tf32 says (default on)
and torch.matmul's time at the GEMM shapes of the forward (x @ W.T), TF32 off and on.
Writes one JSON object (--json FILE, and stdout). --dry-run: a tiny model on the CPU, two
steps per mode except compile: checks the script where there is no GPU.
"""
import argparse
import json
import math
import statistics
import sys
import time


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--d-model", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--modes", default="fp32,tf32,compile")
    p.add_argument("--compile-tf32", type=int, default=1)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--json", default="")
    p.add_argument("--dry-run", action="store_true")
    return p.parse_args()


def build(torch, a, device):
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            d = a.d_model
            self.ln1 = nn.LayerNorm(d, eps=1e-5)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d, eps=1e-5)
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            h = a.heads
            q = q.view(b, t, h, d // h).transpose(1, 2)
            k = k.view(b, t, h, d // h).transpose(1, 2)
            v = v.view(b, t, h, d // h).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(a.vocab, a.d_model)
            self.pos = nn.Embedding(a.seq, a.d_model)
            self.blocks = nn.ModuleList([Block() for _ in range(a.layers)])
            self.ln_f = nn.LayerNorm(a.d_model, eps=1e-5)
            self.head = nn.Linear(a.d_model, a.vocab, bias=False)

        def forward(self, idx, targets):
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
            for blk in self.blocks:
                x = blk(x)
            logits = self.head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    return GPT().to(device)


def run_mode(torch, a, device, mode):
    tf32 = mode == "tf32" or (mode == "compile" and a.compile_tf32)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.manual_seed(1)
    model = build(torch, a, device)
    fused = device.type == "cuda"
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, fused=fused)
    step_fn = torch.compile(model) if mode == "compile" else model
    g = torch.Generator(device="cpu").manual_seed(2)
    idx = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g).to(device)
    tgt = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g).to(device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times, losses = [], []
    t_first = time.perf_counter()
    for i in range(a.warmup + a.steps):
        sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = step_fn(idx, tgt)
        loss.backward()
        opt.step()
        sync()
        if i == 0:
            first_step_s = time.perf_counter() - t_first
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
        losses.append(float(loss))
    r = {"mode": mode, "tf32": tf32, "step_ms": 1e3 * statistics.median(times), "steps": len(times),
         "first_step_s": first_step_s, "losses": losses}
    if device.type == "cuda":
        r["peak_memory_bytes"] = torch.cuda.max_memory_allocated()
    del model, opt, step_fn
    return r


def gemm_times(torch, a, device):
    rows = a.batch * a.seq
    d = a.d_model
    shapes = {"qkv": (rows, 3 * d, d), "proj": (rows, d, d), "fc1": (rows, 4 * d, d), "fc2": (rows, d, 4 * d),
              "lm_head": (rows, a.vocab, d)}
    out = []
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for name, (m, n, k) in shapes.items():
            x = torch.randn(m, k, device=device)
            w = torch.randn(n, k, device=device)
            reps = 20 if device.type == "cuda" else 1
            for _ in range(3):
                y = x @ w.T
            if device.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(reps):
                y = x @ w.T
            if device.type == "cuda":
                torch.cuda.synchronize()
            ms = 1e3 * (time.perf_counter() - t0) / reps
            out.append({"name": name, "m": m, "n": n, "k": k, "tf32": tf32, "ms": ms,
                        "tflops": 2.0 * m * n * k / (ms * 1e-3) / 1e12})
            del x, w, y
    return out


def main():
    a = parse()
    try:
        import torch
    except ImportError:
        print("torch_gpt: PyTorch is not installed", file=sys.stderr)
        return 3
    if a.dry_run:
        a.layers, a.d_model, a.heads, a.seq, a.vocab, a.batch = 2, 32, 4, 16, 64, 2
        a.steps, a.warmup = 2, 0
        device = torch.device("cpu")
        modes = [m for m in a.modes.split(",") if m != "compile"]
    else:
        if not torch.cuda.is_available():
            print("torch_gpt: no CUDA device for PyTorch", file=sys.stderr)
            return 3
        device = torch.device("cuda")
        modes = a.modes.split(",")
    result = {"format": "pipewright.torch-gpt-bench/1", "torch": torch.__version__,
              "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
              "shape": {"layers": a.layers, "d_model": a.d_model, "heads": a.heads, "seq": a.seq,
                        "vocab": a.vocab, "batch": a.batch},
              "dry_run": a.dry_run, "modes": [], "gemm": []}
    for m in modes:
        r = run_mode(torch, a, device, m)
        if not all(math.isfinite(x) for x in r["losses"]):
            print(f"torch_gpt: mode {m}: non-finite loss", file=sys.stderr)
            return 1
        result["modes"].append(r)
        print(f"torch_gpt: {m}: {r['step_ms']:.1f} ms/step", file=sys.stderr)
    result["gemm"] = gemm_times(torch, a, device)
    text = json.dumps(result, indent=1)
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            f.write(text + "\n")
        import os
        os.replace(a.json + ".tmp", a.json)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
