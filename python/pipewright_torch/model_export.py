"""A TracedGraph as a pipewright.model/1 document (models/layer_graph.h)."""

import operator
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from .graph import Layer, TracedGraph

LOSSES = ("xent", "mse")


def _pair(v) -> Optional[int]:
    """An int, or a pair of equal ints, as one int; None otherwise."""
    if isinstance(v, int):
        return v
    if isinstance(v, (tuple, list)) and len(v) == 2 and v[0] == v[1] and isinstance(v[0], int):
        return v[0]
    return None


def _tensor_meta(node):
    """The TensorMetadata of a node's output, or of the first element of a tuple output."""
    meta = node.meta.get("tensor_meta")
    if isinstance(meta, (list, tuple)) and not hasattr(meta, "shape") and meta:
        meta = meta[0]
    return meta if hasattr(meta, "shape") and hasattr(meta, "dtype") else None


def _input_shape(layer: Layer, graph: TracedGraph) -> Optional[List[int]]:
    """Per-sample shape of the layer's single tensor input, from the traced shapes."""
    ins = [n for n in layer.nodes[0].all_input_nodes if n.op != "get_attr"]
    if len(ins) != 1 and not (len(set(ins)) == 1 and ins):
        return None
    n = ins[0]
    if n.op == "placeholder":
        return list(graph.example_shape[1:])
    meta = _tensor_meta(n)
    return [int(d) for d in meta.shape[1:]] if meta is not None and hasattr(meta, "shape") else None


def _input_hw(layer: Layer, graph: TracedGraph) -> Optional[Tuple[int, int, int]]:
    shape = _input_shape(layer, graph)
    if shape is None or len(shape) != 3:
        return None
    return shape[0], shape[1], shape[2]


def _same_shaped_add(node) -> bool:
    if node.target not in (operator.add, torch.add) or len(node.args) != 2 or node.kwargs:
        return False
    if not all(isinstance(a, torch.fx.Node) and a.op != "get_attr" for a in node.args):
        return False
    shapes = [_tensor_meta(a) for a in node.args]
    return None not in shapes and shapes[0].shape == shapes[1].shape


def _attention(layer: Layer, graph: TracedGraph, mod: nn.MultiheadAttention) -> Optional[Dict[str, int]]:
    """Self-attention over [seq, d_model] with the projections Pipewright's attention has."""
    node = layer.node
    shape = _input_shape(layer, graph)
    qkv = [a for a in node.args[:3]] + [node.kwargs.get(k) for k in ("query", "key", "value") if k in node.kwargs]
    if not getattr(mod, "batch_first", False) or shape is None or len(shape) != 2 or len(set(qkv)) != 1:
        return None
    if not mod._qkv_same_embed_dim or mod.in_proj_bias is None or mod.bias_k is not None or \
            mod.add_zero_attn or mod.out_proj.bias is None or shape[1] != mod.embed_dim:
        return None
    return {"seq": shape[0], "d_model": mod.embed_dim, "heads": mod.num_heads,
            "causal": int(graph.mha_causal.get(node.name, False))}


def _tied_head(layer: Layer, graph: TracedGraph, mod: nn.Linear) -> Optional[Dict[str, int]]:
    """A bias-free Linear over [seq, d_model] whose weight is a fused embedding's token table."""
    shape = _input_shape(layer, graph)
    if mod.bias is not None or shape is None or len(shape) != 2:
        return None
    for other in graph.layers:
        if other.fused == "embedding" and other.module.weight is mod.weight:
            return {"seq": shape[0], "d_model": mod.in_features, "vocab": mod.out_features, "tied": 1}
    return None


def _kind(layer: Layer, graph: TracedGraph) -> Tuple[str, Dict[str, int]]:
    """The Pipewright kind and attributes of a layer; ("opaque", {...}) when none fits."""
    node, mod = layer.node, layer.module
    owned = layer.parameter_count
    own_all = mod is None or owned == sum(p.numel() for p in mod.parameters()) or layer.shares
    if node.op == "placeholder":
        if graph.input_dtype == torch.long and len(layer.shape) == 1:
            return "input", {"seq": layer.shape[0], "vocab": graph.vocab}
        return "input", {}
    if layer.fused == "embedding":
        return "embedding", {"vocab": layer.module.num_embeddings, "seq": layer.shape[0], "d_model": layer.shape[1]}
    chw = _input_hw(layer, graph)
    if isinstance(mod, nn.Linear) and not own_all:
        head = _tied_head(layer, graph, mod)
        if head:
            return "lm_head", head
    if not own_all or (mod is None and owned > 0):
        return "opaque", {"parameters": owned}
    if isinstance(mod, nn.Conv2d) and chw:
        k, s, p, d = _pair(mod.kernel_size), _pair(mod.stride), _pair(mod.padding), _pair(mod.dilation)
        if None not in (k, s, p) and d == 1 and mod.padding_mode == "zeros":
            attrs = {"in_c": mod.in_channels, "out_c": mod.out_channels, "kernel": k, "stride": s,
                     "pad": p, "in_h": chw[1], "in_w": chw[2], "bias": int(mod.bias is not None)}
            if mod.groups != 1:
                attrs["groups"] = mod.groups
            return "conv2d", attrs
    if isinstance(mod, nn.Linear) and layer.shape[-1] == mod.out_features:
        return "linear", {"in": mod.in_features, "out": mod.out_features, "bias": int(mod.bias is not None)}
    if isinstance(mod, nn.ReLU) or node.target in (torch.relu, F.relu):
        return "relu", {}
    if isinstance(mod, nn.GELU) or node.target is F.gelu:
        return "gelu", {}
    if isinstance(mod, nn.Dropout) or node.target is F.dropout:
        p = mod.p if mod is not None else node.kwargs.get("p", node.args[1] if len(node.args) > 1 else 0.5)
        if 0 <= p < 1:
            return "dropout", {"permille": int(round(p * 1000)) if p < 0.9995 else 999}
    if isinstance(mod, nn.LayerNorm) and len(mod.normalized_shape) == 1 and mod.elementwise_affine and \
            owned == 2 * mod.normalized_shape[0] and layer.shape[-1] == mod.normalized_shape[0]:
        return "layer_norm", {"dim": mod.normalized_shape[0]}
    if isinstance(mod, nn.MultiheadAttention):
        attrs = _attention(layer, graph, mod)
        if attrs:
            return "attention", attrs
    if isinstance(mod, nn.BatchNorm2d) and chw and mod.affine:
        return "batch_norm", {"c": chw[0], "h": chw[1], "w": chw[2]}
    if isinstance(mod, (nn.MaxPool2d, nn.AvgPool2d)) and chw:
        k, s, p = _pair(mod.kernel_size), _pair(mod.stride), _pair(mod.padding)
        ok = None not in (k, s, p) and not mod.ceil_mode
        if isinstance(mod, nn.MaxPool2d):
            ok = ok and _pair(mod.dilation) == 1
        else:
            ok = ok and mod.count_include_pad and mod.divisor_override is None
        if ok:
            return ("max_pool" if isinstance(mod, nn.MaxPool2d) else "avg_pool"), {
                "c": chw[0], "kernel": k, "stride": s, "pad": p, "in_h": chw[1], "in_w": chw[2]}
    if isinstance(mod, nn.AdaptiveAvgPool2d) and chw and chw[1] == chw[2] and len(layer.shape) == 3:
        # Equal windows tile the input exactly when the output size divides the input size.
        out = layer.shape[1]
        if layer.shape[2] == out and chw[1] % out == 0:
            k = chw[1] // out
            return "avg_pool", {"c": chw[0], "kernel": k, "stride": k, "pad": 0, "in_h": chw[1], "in_w": chw[2]}
    if isinstance(mod, nn.Flatten) or node.target is torch.flatten or \
            (node.op == "call_method" and node.target in ("flatten", "view", "reshape")):
        if len(layer.shape) == 1:
            return "flatten", {}
    if len(layer.inputs) == 2 and _same_shaped_add(node):
        return "residual_add", {}
    return "opaque", {"parameters": owned}


def _loss(graph: TracedGraph, layers: List[dict], loss: str) -> dict:
    """The loss layer read by the model's single output."""
    out = [n for n in graph.module.graph.nodes if n.op == "output"][0]
    result = out.args[0]
    last = layers[-1]
    if not isinstance(result, torch.fx.Node) or not hasattr(result.meta.get("tensor_meta"), "shape"):
        raise ValueError(f"--loss: {graph.name} returns more than one tensor; a loss reads one")
    producer = [l for l in graph.layers if result in l.nodes or l.node is result]
    if producer:
        last = next(l for l in layers if l["name"] == producer[0].name)
    shape = [int(d) for d in result.meta["tensor_meta"].shape[1:]] or [1]
    if last["output_shape"] != shape:
        raise ValueError(f"--loss: the output of {graph.name} is a re-view of layer \"{last['name']}\"; "
                         "a loss reads a layer's output")
    name = "loss"
    while any(l["name"] == name for l in layers):
        name = "_" + name
    if loss == "xent":
        rows = 1
        for d in shape[:-1]:
            rows *= d
        return {"name": name, "kind": "softmax_xent", "inputs": [last["name"]], "output_shape": [1],
                "attrs": {"rows": rows, "classes": shape[-1]}}
    elements = 1
    for d in shape:
        elements *= d
    return {"name": name, "kind": "mse_loss", "inputs": [last["name"]], "output_shape": [1],
            "attrs": {"dim": elements}}


def export_model(graph: TracedGraph, name: Optional[str] = None, loss: Optional[str] = None) -> dict:
    """The pipewright.model/1 JSON document of a traced graph: layers in topological order with
    their producers (the DAG's edges), per-sample output shapes and attributes; `opaque` layers
    carry their parameter count in attrs.parameters; `module` names the submodule whose call
    begins with the layer (a pipeline split point), `shares` the layer whose module a repeated
    call reuses. `loss` ("xent" or "mse") appends the loss layer that training needs."""
    layers = []
    for layer in graph.layers:
        kind, attrs = _kind(layer, graph)
        entry = {"name": layer.name, "kind": kind, "inputs": layer.inputs, "output_shape": layer.shape}
        if attrs:
            entry["attrs"] = attrs
        if layer.split_module:
            entry["module"] = layer.split_module
        if layer.shares:
            entry["shares"] = layer.shares
        layers.append(entry)
    if loss is not None:
        if loss not in LOSSES:
            raise ValueError(f"--loss: expected one of {', '.join(LOSSES)}, got \"{loss}\"")
        layers.append(_loss(graph, layers, loss))
    return {"format": "pipewright.model/1", "name": name or graph.name, "batch": graph.example_shape[0],
            "layers": layers}


def kinds(graph: TracedGraph) -> Dict[str, str]:
    """Layer name -> Pipewright kind (for the profile)."""
    return {layer.name: _kind(layer, graph)[0] for layer in graph.layers}
