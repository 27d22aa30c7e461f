"""A TracedGraph as a pipewright.model/1 document (models/layer_graph.h)."""

import operator
from typing import Dict, Optional, Tuple

import torch
import torch.nn as nn

from .graph import Layer, TracedGraph


def _pair(v) -> Optional[int]:
    """An int, or a pair of equal ints, as one int; None otherwise."""
    if isinstance(v, int):
        return v
    if isinstance(v, (tuple, list)) and len(v) == 2 and v[0] == v[1] and isinstance(v[0], int):
        return v[0]
    return None


def _input_hw(layer: Layer, graph: TracedGraph) -> Optional[Tuple[int, int, int]]:
    """(c, h, w) of the layer's single tensor input, from the traced shapes."""
    ins = [n for n in layer.node.all_input_nodes]
    if len(ins) != 1:
        return None
    meta = ins[0].meta.get("tensor_meta") if ins[0].op != "placeholder" else None
    shape = list(meta.shape[1:]) if meta is not None and hasattr(meta, "shape") else (
        graph.example_shape[1:] if ins[0].op == "placeholder" else None)
    if shape is None or len(shape) != 3:
        return None
    return int(shape[0]), int(shape[1]), int(shape[2])


def _kind(layer: Layer, graph: TracedGraph) -> Tuple[str, Dict[str, int]]:
    """The Pipewright kind and attributes of a layer; ("opaque", {...}) when none fits."""
    node, mod = layer.node, layer.module
    if node.op == "placeholder":
        return "input", {}
    chw = _input_hw(layer, graph)
    if isinstance(mod, nn.Conv2d) and chw:
        k, s, p, d = _pair(mod.kernel_size), _pair(mod.stride), _pair(mod.padding), _pair(mod.dilation)
        if None not in (k, s, p) and d == 1 and mod.groups == 1 and mod.padding_mode == "zeros":
            return "conv2d", {"in_c": mod.in_channels, "out_c": mod.out_channels, "kernel": k, "stride": s,
                              "pad": p, "in_h": chw[1], "in_w": chw[2], "bias": int(mod.bias is not None)}
    if isinstance(mod, nn.Linear) and len(layer.shape) == 1:
        return "linear", {"in": mod.in_features, "out": mod.out_features, "bias": int(mod.bias is not None)}
    if isinstance(mod, nn.ReLU) or node.target in (torch.relu, torch.nn.functional.relu):
        return "relu", {}
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
    if isinstance(mod, nn.AdaptiveAvgPool2d) and chw and chw[1] == chw[2] and layer.shape[1:] == [1, 1]:
        return "avg_pool", {"c": chw[0], "kernel": chw[1], "stride": 1, "pad": 0, "in_h": chw[1], "in_w": chw[2]}
    if isinstance(mod, nn.Flatten) or node.target is torch.flatten:
        if len(layer.shape) == 1:
            return "flatten", {}
    if node.target in (operator.add, torch.add) and len(layer.inputs) == 2 and len(node.args) == 2 and \
            all(isinstance(a, torch.fx.Node) for a in node.args):
        return "residual_add", {}
    return "opaque", {"parameters": layer.parameter_count}


def export_model(graph: TracedGraph, name: Optional[str] = None) -> dict:
    """The pipewright.model/1 JSON document of a traced graph: layers in topological order with
    their producers (the DAG's edges), per-sample output shapes and attributes; `opaque` layers
    carry their parameter count in attrs.parameters."""
    layers = []
    for layer in graph.layers:
        kind, attrs = _kind(layer, graph)
        entry = {"name": layer.name, "kind": kind, "inputs": layer.inputs, "output_shape": layer.shape}
        if attrs:
            entry["attrs"] = attrs
        layers.append(entry)
    return {"format": "pipewright.model/1", "name": name or graph.name, "batch": graph.example_shape[0],
            "layers": layers}


def kinds(graph: TracedGraph) -> Dict[str, str]:
    """Layer name -> Pipewright kind (for the profile)."""
    return {layer.name: _kind(layer, graph)[0] for layer in graph.layers}
