"""Tracing: an nn.Module -> a list of layers (fx nodes with tensor outputs) with shapes,
inputs, the parameters each owns and the submodule path a pipeline split may name."""

import bisect
import collections
import contextlib
import dis
import inspect
import io
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch
import torch.fx
import torch.nn as nn
from torch.fx.passes.shape_prop import ShapeProp

# Methods and functions that only re-view their single tensor input (same elements): consumers
# see through them to the producing layer, as a pipeline stage would send the producer's output.
# A view to one dimension per sample stays a layer (Pipewright's flatten).
_VIEW_METHODS = {"view", "reshape", "permute", "transpose", "contiguous", "squeeze", "unsqueeze", "flatten"}
_VIEW_FUNCTIONS = {torch.reshape, torch.permute, torch.transpose, torch.squeeze, torch.unsqueeze, torch.flatten}


@dataclass
class Layer:
    name: str                 # unique; a submodule path for the first call of a module
    node: torch.fx.Node       # the node whose output is the layer's output
    inputs: List[str]         # producer layer names, in first-use order
    shape: List[int]          # per-sample output shape (batch dim dropped); [elements] for tuples
    module: Optional[torch.nn.Module] = None
    params: List[torch.nn.Parameter] = field(default_factory=list)  # owned (counted once)
    split_module: str = ""    # a submodule called once whose call begins with this layer
    shares: str = ""          # the earlier layer whose module (and parameters) this call reuses
    nodes: List[torch.fx.Node] = field(default_factory=list)  # every node it stands for, in order
    fused: str = ""           # "embedding": a token embedding and its position add in one layer

    @property
    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.params)


@dataclass
class TracedGraph:
    name: str
    module: torch.fx.GraphModule
    example_shape: List[int]  # full input shape, batch first
    layers: List[Layer]
    input_dtype: torch.dtype = torch.float32
    vocab: int = 0            # token inputs: ids are in [0, vocab)
    mha_causal: Dict[str, bool] = field(default_factory=dict)  # MultiheadAttention node -> causal mask

    @property
    def parameter_count(self) -> int:
        return sum(layer.parameter_count for layer in self.layers)

    def example_input(self, batch: int = 0) -> torch.Tensor:
        shape = [batch or self.example_shape[0]] + list(self.example_shape[1:])
        if self.input_dtype == torch.long:
            return torch.randint(0, self.vocab, shape)
        return torch.randn(*shape)


class _Tracer(torch.fx.Tracer):
    """torch.fx's tracer, recording for every node the module calls it is inside, and counting
    each module's calls; proxies unpack on every Python version (_proxy_iter)."""

    def __init__(self):
        super().__init__()
        self.stack: List[str] = []
        self.calls: Dict[str, int] = collections.Counter()

    def call_module(self, m, forward, args, kwargs):
        path = self.path_of_module(m)
        self.calls[path] += 1
        self.stack.append(path)
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self.stack.pop()

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        node.meta["pw_stack"] = tuple(self.stack)
        return node

    def trace(self, root, concrete_args=None):
        original = torch.fx.proxy.Proxy.__iter__
        torch.fx.proxy.Proxy.__iter__ = _proxy_iter
        try:
            return super().trace(root, concrete_args)
        finally:
            torch.fx.proxy.Proxy.__iter__ = original


def _proxy_iter(self):
    """Proxy.__iter__ for tuple unpacking (`n, c, h, w = x.shape`) on every Python version: the
    unpacking instruction is found by its byte offset (older torch releases divide the offset
    by 2, which Python 3.11's inline caches break)."""
    frame = inspect.currentframe().f_back
    insts = list(dis.get_instructions(frame.f_code))
    k = bisect.bisect_left([i.offset for i in insts], frame.f_lasti)
    if k < len(insts) and insts[k].opname == "UNPACK_SEQUENCE":
        return (self[i] for i in range(insts[k].argval))
    return self.tracer.iter(self)


class _Recorder(ShapeProp):
    """ShapeProp that also records whether each MultiheadAttention call is causal."""

    def __init__(self, gm, causal: Dict[str, bool]):
        super().__init__(gm)
        self.causal = causal

    def run_node(self, n):
        if n.op == "call_module" and isinstance(self.module.get_submodule(n.target), nn.MultiheadAttention):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            self.causal[n.name] = _is_causal(args, kwargs)
        return super().run_node(n)


def _is_causal(args, kwargs) -> bool:
    mask = kwargs.get("attn_mask", args[5] if len(args) > 5 else None)
    if kwargs.get("key_padding_mask", args[3] if len(args) > 3 else None) is not None:
        return False
    if mask is None:
        return bool(kwargs.get("is_causal", False))
    if mask.dim() != 2 or mask.shape[0] != mask.shape[1]:
        return False
    upper = torch.triu(torch.ones(mask.shape, dtype=torch.bool), diagonal=1)
    if mask.dtype == torch.bool:
        return bool(torch.equal(mask, upper))
    return bool(torch.all(mask[upper] == float("-inf")) and torch.all(mask[~upper] == 0))


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
        if parts and parts[0] is not None:
            return parts[0]  # (output, None): a module's output with its optional extras
    if isinstance(meta, dict):
        return _elements(list(meta.values()))
    return None


def _first_shape(meta) -> Optional[List[int]]:
    if hasattr(meta, "shape"):
        return [int(d) for d in meta.shape[1:]] or [1]
    if _is_tuple_meta(meta) and meta and hasattr(meta[0], "shape"):
        return [int(d) for d in meta[0].shape[1:]] or [1]
    return None


def _is_tuple_meta(meta) -> bool:
    """A tuple of outputs (not one tensor's TensorMetadata, itself a named tuple)."""
    return isinstance(meta, (list, tuple)) and not (hasattr(meta, "shape") and hasattr(meta, "dtype"))


def _is_view(node: torch.fx.Node) -> bool:
    return (node.op == "call_method" and node.target in _VIEW_METHODS) or \
        (node.op == "call_function" and node.target in _VIEW_FUNCTIONS)


def _token_vocab(gm: torch.fx.GraphModule) -> int:
    """num_embeddings of the nn.Embedding that first reads the input, or 0."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if not placeholders:
        return 0
    for user in gm.graph.nodes:
        if placeholders[0] in user.all_input_nodes:
            if user.op == "call_module" and isinstance(gm.get_submodule(user.target), nn.Embedding):
                return gm.get_submodule(user.target).num_embeddings
            return 0
    return 0


def trace(module: torch.nn.Module, input_shape, name: Optional[str] = None, input_dtype: Optional[str] = None,
          vocab: int = 0) -> TracedGraph:
    """Traces `module` with torch.fx and propagates a random input of `input_shape` (batch
    first; use a batch of at least 2 for models with batch norm). `input_dtype` "long" feeds
    token ids in [0, vocab) (vocab default: the reading Embedding's num_embeddings); None infers
    token ids when the input's first reader is an nn.Embedding. Raises ValueError when the
    graph has no layer, when token ids have no vocabulary, or when the parameters do not add
    up to the module's own count."""
    input_shape = [int(d) for d in input_shape]
    tracer = _Tracer()
    graph_ir = tracer.trace(module)
    gm = torch.fx.GraphModule(tracer.root, graph_ir, type(module).__name__)
    gname = name or type(module).__name__.lower()
    first_reader_vocab = _token_vocab(gm)
    if input_dtype is None:
        input_dtype = "long" if first_reader_vocab else "float"
    if input_dtype not in ("long", "float"):
        raise ValueError(f"input dtype: expected long or float, got \"{input_dtype}\"")
    dtype = torch.long if input_dtype == "long" else torch.float32
    vocab = vocab or (first_reader_vocab if dtype == torch.long else 0)
    if dtype == torch.long and vocab < 1:
        raise ValueError(f"{gname}: token inputs need a vocabulary size (--vocab): no nn.Embedding reads the input")
    graph = TracedGraph(gname, gm, input_shape, [], dtype, vocab)
    try:
        with torch.no_grad(), contextlib.redirect_stderr(io.StringIO()):  # ShapeProp prints tracebacks
            _Recorder(gm, graph.mha_causal).propagate(graph.example_input())
    except Exception as e:  # the model's own error, on the example input
        cause = e.__cause__ or e.__context__ or e
        raise ValueError(f"{gname}: the model fails on a {input_dtype} input of shape {input_shape}: "
                         f"{str(cause).splitlines()[0] if str(cause) else type(cause).__name__}") from e

    modules = dict(gm.named_modules())
    owner: Dict[int, str] = {}         # id(param) -> layer that counts it
    module_layer: Dict[int, str] = {}  # id(module) -> the layer of its first call
    used_names = set()
    layer_of: Dict[str, List[str]] = {}  # node name -> layer names it stands for
    layers = graph.layers
    pending: Dict[str, List[torch.nn.Parameter]] = {}  # glue node -> parameters it carries

    for node in gm.graph.nodes:
        if node.op == "output":
            continue
        if node.op == "get_attr":
            # A parameter or buffer used directly (a class token, a position table): its
            # parameters belong to the first layer that consumes it.
            obj = gm
            for part in node.target.split("."):
                obj = getattr(obj, part)
            pending[node.name] = [obj] if isinstance(obj, torch.nn.Parameter) else []
            layer_of[node.name] = []
            continue
        meta = node.meta.get("tensor_meta")
        elems = _elements(meta) if node.op != "placeholder" else int(torch.Size(input_shape[1:]).numel())
        inputs: List[str] = []
        carried: List[torch.nn.Parameter] = []
        for n in node.all_input_nodes:
            for producer in layer_of.get(n.name, []):
                if producer not in inputs:
                    inputs.append(producer)
            carried += pending.get(n.name, [])
        mod = modules.get(node.target) if node.op == "call_module" else None
        is_getitem0 = node.op == "call_function" and getattr(node.target, "__name__", "") == "getitem" and \
            len(node.args) == 2 and node.args[1] == 0 and isinstance(node.args[0], torch.fx.Node) and \
            _is_tuple_meta(node.args[0].meta.get("tensor_meta"))
        if elems is None or elems == 0:
            # Not a tensor (x.size(), shapes, asserts): what reads it depends on no layer's data.
            layer_of[node.name] = []
            pending[node.name] = carried
            continue
        flattens = len(_first_shape(meta) or []) == 1  # Pipewright's flatten layer (to one dim)
        if is_getitem0 or (_is_view(node) and len(inputs) == 1 and not carried and not flattens):
            # The first output of a tuple-valued layer, or a view: glue, not a layer; consumers
            # see through it to its producer.
            layer_of[node.name] = inputs
            pending[node.name] = carried
            continue
        if node.op != "placeholder" and not inputs and mod is None:
            # Computed from shapes and constants only (a mask, positions, an expanded token):
            # a constant, whose parameters go to the first layer that reads it.
            layer_of[node.name] = []
            pending[node.name] = carried
            continue
        lname = node.target if node.op == "call_module" and node.target not in used_names else node.name
        if lname in used_names:
            lname = node.name
        used_names.add(lname)
        shape = input_shape[1:] if node.op == "placeholder" else (_first_shape(meta) or [elems])
        params = []
        shares = ""
        if mod is not None and id(mod) in module_layer:
            if any(True for _ in mod.parameters()):
                shares = module_layer[id(mod)]
        elif mod is not None:
            module_layer[id(mod)] = lname
        for p in (list(mod.parameters()) if mod is not None else []) + carried:
            if id(p) not in owner:
                owner[id(p)] = lname
                params.append(p)
        layers.append(Layer(lname, node, inputs, shape, mod, params, shares=shares, nodes=[node]))
        layer_of[node.name] = [lname]

    if not layers:
        raise ValueError(f"{graph.name}: the traced graph has no layers")
    _fuse_embeddings(graph)
    _split_modules(graph, tracer.calls)
    expected = sum(p.numel() for p in module.parameters())
    if graph.parameter_count != expected:
        raise ValueError(f"{graph.name}: layers own {graph.parameter_count} parameters, the module has {expected}")
    return graph


def _position_embedding(graph: TracedGraph, name: str, shape: List[int]) -> Optional[Layer]:
    """An nn.Embedding of positions (read from constants only) with one row per position."""
    layer = next((l for l in graph.layers if l.name == name), None)
    meta = layer.node.meta.get("tensor_meta") if layer is not None else None
    full = [int(d) for d in meta.shape] if hasattr(meta, "shape") else []  # no batch dimension
    if layer is None or not isinstance(layer.module, nn.Embedding) or layer.inputs or layer.shares or \
            full[-2:] != shape or layer.module.num_embeddings != shape[0] or \
            sum(1 for l in graph.layers if name in l.inputs) != 1:
        return None
    return layer


def _fuse_embeddings(graph: TracedGraph) -> None:
    """A token nn.Embedding whose only reader adds a learned position table of its own shape
    (a parameter, or an nn.Embedding of the positions) becomes one layer (Pipewright's
    embedding: token + position), named after the token Embedding."""
    for emb in list(graph.layers):
        if not isinstance(emb.module, nn.Embedding) or emb.shares or len(emb.shape) != 2 or emb not in graph.layers:
            continue
        readers = [l for l in graph.layers if emb.name in l.inputs]
        if len(readers) != 1:
            continue
        add = readers[0]
        node = add.node
        if node.op != "call_function" or getattr(node.target, "__name__", "") not in ("add", "iadd"):
            continue
        positions = None
        if len(add.inputs) == 2 and not add.params:
            other = add.inputs[1] if add.inputs[0] == emb.name else add.inputs[0]
            positions = _position_embedding(graph, other, emb.shape)
            if positions is None:
                continue
        elif add.inputs != [emb.name] or len(add.params) != 1 or list(add.params[0].shape[-2:]) != emb.shape \
                or add.params[0].numel() != emb.shape[0] * emb.shape[1]:
            continue
        members = [positions] if positions else []
        for member in members + [add]:
            emb.params += member.params
            emb.nodes += member.nodes
            graph.layers.remove(member)
        emb.node = add.node
        emb.fused = "embedding"
        for l in graph.layers:
            l.inputs = [emb.name if i == add.name else i for i in l.inputs]


def _split_modules(graph: TracedGraph, calls: Dict[str, int]) -> None:
    """Each layer's split_module: the outermost submodule, called once, whose call begins with
    the layer (a split before that submodule's call is a split before the layer)."""
    first_layer: Dict[str, str] = {}
    for layer in graph.layers:
        for node in layer.nodes:
            for path in node.meta.get("pw_stack", ()):
                first_layer.setdefault(path, layer.name)
    for layer in graph.layers:
        for path in layer.nodes[0].meta.get("pw_stack", ()):
            if path and calls.get(path) == 1 and first_layer.get(path) == layer.name:
                layer.split_module = path
                break
