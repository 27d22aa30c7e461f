"""Measures a pipewright.profile/1 (models/profile.h) of a traced graph on this machine.

Every layer is timed in isolation on the inputs the whole model gives it (one traced run
records them): forward with autograd recording, then the backward split into B (gradient with
respect to the layer's inputs) and W (with respect to its parameters), each the median of
`reps` runs after `warmup`. Bytes: output_bytes the layer's output, stash_bytes what autograd
saves for backward (saved-tensor hooks; parameters excluded), parameter_bytes 4 per parameter
(fp32). The source layer is data loading (no compute). A layer standing for several nodes (a
token embedding with its position add) is the sum of its nodes' times. Progress goes to
`progress` (a stream, e.g. sys.stderr) at every tenth of the layers, with the time left."""

import os
import platform
import statistics
import time
from typing import Dict, List, Optional, TextIO

import torch
import torch.fx

from .graph import TracedGraph
from .model_export import kinds


class _Recorder(torch.fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm, garbage_collect_values=False)


def _tensors(value) -> List[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _bytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def _call(node: torch.fx.Node, gm, args, kwargs):
    if node.op == "call_module":
        return gm.get_submodule(node.target)(*args, **kwargs)
    if node.op == "call_function":
        return node.target(*args, **kwargs)
    if node.op == "call_method":
        return getattr(args[0], node.target)(*args[1:], **kwargs)
    raise ValueError(f"cannot time node {node.name} ({node.op})")


def _median_ns(samples: List[int]) -> int:
    return int(statistics.median(samples)) if samples else 0


def _progress_line(done: int, total: int, layer: str, elapsed: float) -> str:
    left = elapsed / done * (total - done)
    return f"profile: {done}/{total} layers ({layer}), {elapsed:.1f} s elapsed, about {left:.0f} s left"


def measure_profile(graph: TracedGraph, micro_batch: int = 0, reps: int = 5, warmup: int = 1,
                    backward: bool = True, name: str = "", progress: Optional[TextIO] = None) -> dict:
    """Measures every layer at `micro_batch` samples (default: the traced batch). With
    backward=False only forward times are measured (B and W are 0)."""
    gm = graph.module
    gm.train()
    batch = micro_batch or graph.example_shape[0]
    example = graph.example_input(batch)
    rec = _Recorder(gm)
    with torch.no_grad():
        rec.run(example)
    env = rec.env
    layer_kinds = kinds(graph)
    layers, edges = [], []
    index: Dict[str, int] = {}
    start = time.monotonic()
    step = max(1, len(graph.layers) // 10)
    for k, layer in enumerate(graph.layers):
        node = layer.node
        out_elems = 1
        for d in layer.shape:
            out_elems *= d
        entry = {"name": layer.name, "kind": layer_kinds[layer.name], "forward_ns": 0, "backward_input_ns": 0,
                 "backward_weight_ns": 0, "output_bytes": out_elems * batch * 4, "stash_bytes": 0,
                 "parameter_bytes": layer.parameter_count * 4, "optimizer_bytes": 0, "workspace_bytes": 0}
        if layer.split_module:
            entry["module"] = layer.split_module
        if node.op == "placeholder":
            entry["is_data_loading"] = True
        else:
            for member in layer.nodes:
                for key, value in _time_layer(member, gm, env, layer.params, reps, warmup, backward).items():
                    entry[key] += value
        if progress is not None and ((k + 1) % step == 0 or k + 1 == len(graph.layers)):
            print(_progress_line(k + 1, len(graph.layers), layer.name, time.monotonic() - start), file=progress,
                  flush=True)
        index[layer.name] = len(layers)
        layers.append(entry)
        for src in layer.inputs:
            edges.append([src, layer.name])
    return {"format": "pipewright.profile/1", "model": name or graph.name, "source": "measured",
            "device": {"name": f"{_cpu_name()} (PyTorch {torch.__version__}, isolated layers)",
                       "cores": os.cpu_count() or 0, "threads": torch.get_num_threads()},
            "micro_batch": batch, "layers": layers, "edges": edges}


def _time_layer(node, gm, env, params, reps, warmup, backward) -> dict:
    param_ids = {id(p) for p in gm.parameters()}
    leaves = []

    def fresh(v, differentiable):
        # A new leaf per run (layers may work in place). Data from the input source needs no
        # gradient (as in training), activations do.
        if isinstance(v, torch.Tensor) and id(v) in param_ids:
            return v  # a parameter read directly (a position table): its gradient is W
        if isinstance(v, torch.Tensor) and v.is_floating_point() and differentiable:
            leaf = v.detach().clone().requires_grad_(True)
            leaves.append(leaf)
            return leaf.clone()
        if isinstance(v, torch.Tensor):
            return v.detach()
        if isinstance(v, (list, tuple)):
            return type(v)(fresh(x, differentiable) for x in v)
        return v

    fwd, bi, bw, stash = [], [], [], 0
    for rep in range(warmup + reps):
        leaves.clear()
        a, k = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: fresh(env[n], n.op != "placeholder"))
        saved = {}

        def pack(t):
            if id(t) not in param_ids and not isinstance(t, torch.nn.Parameter):
                saved[(t.data_ptr(), t.numel(), t.dtype)] = _bytes(t)
            return t

        start = time.perf_counter_ns()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = _call(node, gm, a, k)
        t_fwd = time.perf_counter_ns() - start
        outs = [o for o in _tensors(out) if o.requires_grad]
        t_b = t_w = 0
        if backward and outs:
            grads = [torch.ones_like(o) for o in outs]
            trainable = [p for p in params if p.requires_grad]
            if leaves:
                start = time.perf_counter_ns()
                torch.autograd.grad(outs, leaves, grads, retain_graph=True, allow_unused=True)
                t_b = time.perf_counter_ns() - start
            if trainable:
                start = time.perf_counter_ns()
                torch.autograd.grad(outs, trainable, grads, retain_graph=False, allow_unused=True)
                t_w = time.perf_counter_ns() - start
        if rep >= warmup:
            fwd.append(t_fwd)
            bi.append(t_b)
            bw.append(t_w)
            stash = sum(saved.values())
    return {"forward_ns": _median_ns(fwd), "backward_input_ns": _median_ns(bi), "backward_weight_ns": _median_ns(bw),
            "stash_bytes": stash}
