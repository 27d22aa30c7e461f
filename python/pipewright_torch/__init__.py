"""PyTorch bridge: export an nn.Module as a Pipewright model and a measured profile.

    from pipewright_torch import export_model, measure_profile
    graph = trace(module, (2, 3, 224, 224))        # torch.fx graph with shapes
    model_json = export_model(graph, name="resnet50")          # pipewright.model/1
    profile_json = measure_profile(graph, micro_batch=8)       # pipewright.profile/1

`python3 -m pipewright_torch --help` is the command-line form. Layers are the traced graph's
nodes in topological order: leaf modules under their submodule path (the names
torch.distributed.pipelining's SplitPoint takes), functions under their fx node name.
Modules Pipewright's cost model knows (Conv2d, Linear, ReLU, BatchNorm2d, pools, flatten,
residual adds) get their kind and attributes; everything else is an `opaque` layer whose cost
is only in the measured profile.
"""

from .graph import TracedGraph, trace
from .model_export import export_model
from .profiler import measure_profile

__all__ = ["TracedGraph", "trace", "export_model", "measure_profile"]
