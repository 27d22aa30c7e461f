"""PyTorch bridge: export an nn.Module as a Pipewright model and a measured profile.

    from pipewright_torch import export_model, measure_profile
    graph = trace(module, (2, 3, 224, 224))        # torch.fx graph with shapes
    model_json = export_model(graph, name="resnet50", loss="xent")  # pipewright.model/1
    profile_json = measure_profile(graph, micro_batch=8)       # pipewright.profile/1

`python3 -m pipewright_torch --help` is the command-line form. Layers are the traced graph's
nodes in topological order: leaf modules under their submodule path, functions under their
fx node name; views (reshape, permute, ...) are not layers. Each layer records the submodule
whose call begins with it (`module`: the names torch.distributed.pipelining's SplitPoint
takes) and, for a second call of a module with parameters, the layer whose parameters it
reuses (`shares`). Token inputs (integer ids) are traced when an nn.Embedding reads the input
or when asked for. Modules Pipewright's cost model knows get their kind and attributes:
Conv2d, Linear, ReLU, GELU, Dropout, BatchNorm2d, LayerNorm, pools (AdaptiveAvgPool2d when
its windows tile the input), flatten, residual adds, nn.MultiheadAttention (self-attention,
batch first), an nn.Embedding with its position table (embedding) and a head tied to it
(lm_head); everything else is an `opaque` layer whose cost is only in the measured profile.
"""

from .graph import TracedGraph, trace
from .model_export import export_model
from .profiler import measure_profile

__all__ = ["TracedGraph", "trace", "export_model", "measure_profile"]
