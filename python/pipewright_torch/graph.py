"""Tracing: an nn.Module -> a list of layers (fx nodes with tensor outputs) with shapes,
inputs and the parameters each owns."""

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp


@dataclass
class Layer:
    name: str                 # unique; a submodule path for the first call of a module
    node: torch.fx.Node
    inputs: List[str]         # producer layer names, in first-use order
    shape: List[int]          # per-sample output shape (batch dim dropped); [elements] for tuples
    module: Optional[torch.nn.Module] = None
    params: List[torch.nn.Parameter] = field(default_factory=list)  # owned (counted once)

    @property
    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.params)


@dataclass
class TracedGraph:
    name: str
    module: torch.fx.GraphModule
    example_shape: List[int]  # full input shape, batch first
    layers: List[Layer]

    @property
    def parameter_count(self) -> int:
        return sum(layer.parameter_count for layer in self.layers)


def _elements(meta) -> Optional[int]:
    """Per-sample elements of a node's output; None when it is not (a tuple of) tensors."""
    if meta is None:
        return None
    if hasattr(meta, "shape") and hasattr(meta, "dtype"):
        shape = list(meta.shape)
        return None if not shape else int(torch.Size(shape[1:]).numel())
    if isinstance(meta, (list, tuple)):
        parts = [_elements(m) for m in meta]
        if parts and all(p is not None for p in parts):
            return sum(parts)
    if isinstance(meta, dict):
        return _elements(list(meta.values()))
    return None


def trace(module: torch.nn.Module, input_shape, name: Optional[str] = None) -> TracedGraph:
    """Traces `module` with torch.fx and propagates a random input of `input_shape` (batch
    first; use a batch of at least 2 for models with batch norm). Raises ValueError when the
    graph has no layer or when the parameters do not add up to the module's own count."""
    input_shape = [int(d) for d in input_shape]
    gm = torch.fx.symbolic_trace(module)
    example = torch.randn(*input_shape)
    with torch.no_grad():
        ShapeProp(gm).propagate(example)

    modules = dict(gm.named_modules())
    owner: Dict[int, str] = {}         # id(param) -> layer that counts it
    used_names = set()
    layer_of: Dict[str, Optional[List[str]]] = {}  # node name -> layer names it stands for
    layers: List[Layer] = []
    pending_attr_params: Dict[str, List[torch.nn.Parameter]] = {}

    def resolve(n: torch.fx.Node) -> List[str]:
        return layer_of.get(n.name) or []

    for node in gm.graph.nodes:
        if node.op == "output":
            continue
        if node.op == "get_attr":
            # A parameter or buffer used directly (e.g. a class token): its parameters belong
            # to the first layer that consumes it.
            obj = gm
            for part in node.target.split("."):
                obj = getattr(obj, part)
            pending_attr_params[node.name] = [obj] if isinstance(obj, torch.nn.Parameter) else []
            layer_of[node.name] = None
            continue
        meta = node.meta.get("tensor_meta")
        elems = _elements(meta) if node.op != "placeholder" else int(torch.Size(input_shape[1:]).numel())
        inputs: List[str] = []
        attr_params: List[torch.nn.Parameter] = []
        for n in node.all_input_nodes:
            for producer in resolve(n):
                if producer not in inputs:
                    inputs.append(producer)
            attr_params += pending_attr_params.get(n.name, [])
        if elems is None or elems == 0:
            # Not a tensor (x.size(), shapes, ints): glue, not a layer; consumers see through it.
            layer_of[node.name] = inputs
            continue
        mod = modules.get(node.target) if node.op == "call_module" else None
        lname = node.target if node.op == "call_module" and node.target not in used_names else node.name
        if lname in used_names:
            lname = node.name
        used_names.add(lname)
        if node.op == "placeholder":
            shape = input_shape[1:]
        elif hasattr(meta, "shape"):
            shape = [int(d) for d in meta.shape[1:]] or [1]
        else:
            shape = [elems]
        params = []
        candidates = list(mod.parameters()) if mod is not None else []
        for p in candidates + attr_params:
            if id(p) not in owner:
                owner[id(p)] = lname
                params.append(p)
        layers.append(Layer(lname, node, inputs, shape, mod, params))
        layer_of[node.name] = [lname]

    graph = TracedGraph(name or type(module).__name__.lower(), gm, input_shape, layers)
    expected = sum(p.numel() for p in module.parameters())
    if not layers:
        raise ValueError(f"{graph.name}: the traced graph has no layers")
    if graph.parameter_count != expected:
        raise ValueError(f"{graph.name}: layers own {graph.parameter_count} parameters, the module has {expected}")
    return graph
