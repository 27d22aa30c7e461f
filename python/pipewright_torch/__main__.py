"""python3 -m pipewright_torch MODEL --input C,H,W [--batch N] -o MODEL.json [--profile P.json]
       [--input-dtype long|float] [--vocab V] [--loss xent|mse]

MODEL is `torchvision:<name>` (random weights) or `<module>:<callable>` returning an
nn.Module (e.g. `mypkg.nets:build`). Token inputs (--input SEQ --input-dtype long) are inferred
when the model's first reader of its input is an nn.Embedding."""

import argparse
import importlib
import json
import os
import sys
import tempfile

from . import export_model, measure_profile, trace


def _load(spec: str):
    if ":" not in spec:
        raise ValueError(f"MODEL: expected torchvision:<name> or <module>:<callable>, got \"{spec}\"")
    mod_name, attr = spec.split(":", 1)
    if mod_name == "torchvision":
        import torchvision.models as tvm
        builder = getattr(tvm, attr, None)
        if builder is None:
            raise ValueError(f"MODEL: torchvision.models has no \"{attr}\"")
        kwargs = {"weights": None}
        if attr == "inception_v3":
            kwargs["init_weights"] = False  # scipy-free random initialization
        return builder(**kwargs), attr
    builder = getattr(importlib.import_module(mod_name), attr)
    return builder(), attr


def _write(path: str, doc: dict):
    """Writes JSON atomically: a temporary in the same directory, then a rename; the file gets
    the mode a plain open() would give it (0666 less the umask), not mkstemp's 0600."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".pw_tmp_")
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m pipewright_torch",
                                 description="export a PyTorch model as a Pipewright model and measured profile")
    ap.add_argument("model", help="torchvision:<name> or <module>:<callable>")
    ap.add_argument("--input", required=True, help="per-sample input shape, e.g. 3,224,224")
    ap.add_argument("--batch", type=int, default=2, help="samples traced and measured (micro-batch; default 2)")
    ap.add_argument("-o", "--output", required=True, help="model file (pipewright.model/1)")
    ap.add_argument("--profile", help="also measure a profile (pipewright.profile/1) into this file")
    ap.add_argument("--reps", type=int, default=3, help="timed runs per layer (median; default 3)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs per layer first (default 1)")
    ap.add_argument("--forward-only", action="store_true", help="time forward only (B and W are 0)")
    ap.add_argument("--threads", type=int, help="torch threads (default: PyTorch's)")
    ap.add_argument("--input-dtype", choices=("long", "float"),
                    help="long: token ids in [0, --vocab) (default: long when an nn.Embedding reads the input)")
    ap.add_argument("--vocab", type=int, default=0,
                    help="token ids' range (default: num_embeddings of the nn.Embedding reading them)")
    ap.add_argument("--loss", choices=("xent", "mse"),
                    help="append a loss layer (softmax cross-entropy over the last dim, or mean squared error) "
                         "so that `pipewright run` trains the model")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr while profiling")
    a = ap.parse_args(argv)
    try:
        shape = [int(x) for x in a.input.split(",")]
        if not shape or min(shape) < 1:
            raise ValueError
    except ValueError:
        print(f"--input: expected a comma-separated list of positive sizes, got \"{a.input}\"", file=sys.stderr)
        return 2
    if a.batch < 1 or a.reps < 1 or a.warmup < 0 or a.vocab < 0:
        print("--batch, --reps: expected >= 1; --warmup, --vocab: >= 0", file=sys.stderr)
        return 2
    try:
        module, name = _load(a.model)
    except (ValueError, ImportError, AttributeError) as e:
        print(str(e).splitlines()[0], file=sys.stderr)
        return 2
    import torch
    torch.manual_seed(0)
    if a.threads:
        torch.set_num_threads(a.threads)
    try:
        graph = trace(module, [a.batch] + shape, name=name, input_dtype=a.input_dtype, vocab=a.vocab)
        model_doc = export_model(graph, loss=a.loss)
    except ValueError as e:
        print(str(e).splitlines()[0], file=sys.stderr)
        return 2
    profile_doc = None
    if a.profile:
        profile_doc = measure_profile(graph, reps=a.reps, warmup=a.warmup, backward=not a.forward_only,
                                      progress=None if a.quiet else sys.stderr)
    _write(a.output, model_doc)
    if profile_doc is not None:
        _write(a.profile, profile_doc)
    opaque = sum(1 for l in model_doc["layers"] if l["kind"] == "opaque")
    print(f"{name}: {len(model_doc['layers'])} layers ({opaque} opaque), {graph.parameter_count:,} parameters"
          + (f"; profile at micro-batch {a.batch}" if profile_doc else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
