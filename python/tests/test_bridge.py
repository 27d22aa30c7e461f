"""Tests of the PyTorch bridge (python/pipewright_torch): exports of torchvision models with
exact parameter counts, a small nn.Sequential layer by layer, a measured profile that
`pipewright plan --profile` plans on 4 and 8 devices; user models with token inputs and a tied
head, shared modules, vit_b_16; exported models planned analytically and trained by
`pipewright run`; split points as module paths. Run by ctest (python/CMakeLists.txt) with
PW_CLI naming the pipewright executable."""

import contextlib
import io
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import unittest

import torch
import torch.nn as nn
import torchvision.models as tvm

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from pipewright_torch import export_model, measure_profile, trace  # noqa: E402
from pipewright_torch.__main__ import main as bridge_main  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import tiny_models  # noqa: E402

PW_CLI = os.environ.get("PW_CLI", "")


def check_schema(test, doc):
    """Validates a written document against docs/schemas (when python3-jsonschema is here)."""
    try:
        import jsonschema
    except ImportError:
        return
    kind = doc["format"][len("pipewright."):].split("/")[0]
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "schemas", kind + ".schema.json")) as f:
        schema = json.load(f)
    errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(doc)]
    test.assertEqual(errors, [])


def torchvision_count(model):
    return sum(p.numel() for p in model.parameters())


def opaque_or_counted(doc):
    """Parameters the model file states: analytic kinds' from their attributes, opaque layers'
    from attrs.parameters (the formulas of models/cost.cc for the kinds the bridge emits)."""
    total = 0
    for l in doc["layers"]:
        a = l.get("attrs", {})
        if l["kind"] == "conv2d":
            total += a["out_c"] * a["in_c"] // a.get("groups", 1) * a["kernel"] ** 2 + (a["out_c"] if a.get("bias", 1) else 0)
        elif l["kind"] == "linear" and "shares" not in l:
            total += a["in"] * a["out"] + (a["out"] if a.get("bias", 1) else 0)
        elif l["kind"] == "batch_norm":
            total += 2 * a["c"]
        elif l["kind"] == "layer_norm":
            total += 2 * a["dim"]
        elif l["kind"] == "attention":
            total += 4 * a["d_model"] ** 2 + 4 * a["d_model"]
        elif l["kind"] == "embedding":
            total += (a["vocab"] + a["seq"]) * a["d_model"]
        elif l["kind"] == "lm_head" and not a["tied"]:
            total += a["d_model"] * a["vocab"]
        elif l["kind"] == "opaque":
            total += a["parameters"]
    return total


class TorchvisionExports(unittest.TestCase):
    def check(self, name, shape, expected=None, **kwargs):
        torch.manual_seed(0)
        model = getattr(tvm, name)(weights=None, **kwargs)
        graph = trace(model, shape, name)
        doc = export_model(graph)
        self.assertEqual(doc["format"], "pipewright.model/1")
        self.assertEqual(graph.parameter_count, torchvision_count(model))
        self.assertEqual(opaque_or_counted(doc), torchvision_count(model))
        if expected is not None:
            self.assertEqual(graph.parameter_count, expected)
        names = [l["name"] for l in doc["layers"]]
        self.assertEqual(len(names), len(set(names)))
        seen = set()
        for l in doc["layers"]:  # topological: every input is an earlier layer
            for i in l["inputs"]:
                self.assertIn(i, seen)
            self.assertTrue(all(d > 0 for d in l["output_shape"]))
            seen.add(l["name"])
        return doc

    def test_resnet50(self):
        doc = self.check("resnet50", (2, 3, 64, 64), 25557032)
        kinds = {l["name"]: l["kind"] for l in doc["layers"]}
        self.assertEqual(kinds["conv1"], "conv2d")
        self.assertEqual(kinds["layer1.0.bn1"], "batch_norm")
        self.assertEqual(kinds["fc"], "linear")
        self.assertEqual(sum(1 for k in kinds.values() if k == "residual_add"), 16)
        self.assertEqual(sum(1 for k in kinds.values() if k == "opaque"), 0)

    def test_vgg16(self):
        self.check("vgg16", (2, 3, 32, 32), 138357544)

    def test_densenet121(self):
        self.check("densenet121", (2, 3, 32, 32), 7978856)

    def test_inception_v3(self):
        # Training-mode graph: the auxiliary classifier (which needs the full 299x299) is in it, as in
        # torchvision's count.
        self.check("inception_v3", (2, 3, 299, 299), 27161264, init_weights=False)


class SequentialExport(unittest.TestCase):
    def test_layers_shapes_and_cli_reads_it(self):
        net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
        graph = trace(net, (3, 8), "mlp")
        doc = export_model(graph)
        self.assertEqual(doc, {
            "format": "pipewright.model/1", "name": "mlp", "batch": 3,
            "layers": [
                {"name": "input_1", "kind": "input", "inputs": [], "output_shape": [8]},
                {"name": "0", "kind": "linear", "inputs": ["input_1"], "output_shape": [16],
                 "attrs": {"in": 8, "out": 16, "bias": 1}, "module": "0"},
                {"name": "1", "kind": "relu", "inputs": ["0"], "output_shape": [16], "module": "1"},
                {"name": "2", "kind": "linear", "inputs": ["1"], "output_shape": [4],
                 "attrs": {"in": 16, "out": 4, "bias": 1}, "module": "2"},
            ]})
        if not PW_CLI:
            self.skipTest("PW_CLI not set")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mlp.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            r = subprocess.run([PW_CLI, "model", path, "--json"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["parameters"], 8 * 16 + 16 + 16 * 4 + 4)


class MeasuredProfilePlans(unittest.TestCase):
    def test_resnet50_profile_plans_on_4_and_8_devices(self):
        torch.manual_seed(0)
        graph = trace(tvm.resnet50(weights=None), (2, 3, 32, 32), "resnet50")
        prof = measure_profile(graph, reps=1, warmup=0)
        self.assertEqual(prof["format"], "pipewright.profile/1")
        self.assertEqual(prof["source"], "measured")
        self.assertEqual(len(prof["layers"]), len(graph.layers))
        self.assertEqual(sum(l["parameter_bytes"] for l in prof["layers"]), 4 * 25557032)
        self.assertTrue(prof["layers"][0].get("is_data_loading"))
        conv1 = next(l for l in prof["layers"] if l["name"] == "conv1")
        self.assertGreater(conv1["forward_ns"], 0)
        self.assertEqual(conv1["backward_input_ns"], 0)   # its input is data: no input gradient
        self.assertGreater(conv1["backward_weight_ns"], 0)
        self.assertEqual(conv1["output_bytes"], 2 * 64 * 16 * 16 * 4)
        fc = next(l for l in prof["layers"] if l["name"] == "fc")
        self.assertGreater(fc["backward_input_ns"], 0)
        if not PW_CLI:
            self.skipTest("PW_CLI not set")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "resnet50.profile.json")
            with open(path, "w") as f:
                json.dump(prof, f)
            for devices in (4, 8):
                r = subprocess.run([PW_CLI, "plan", "--profile", path, "--devices", str(devices), "--batch", "32",
                                    "--json"], capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                plan = json.loads(r.stdout)
                self.assertEqual(plan["format"], "pipewright.plan/1")
                self.assertGreaterEqual(len(plan["stages"]), 2)
                self.assertLessEqual(sum(len(s["devices"]) for s in plan["stages"]), devices)
                covered = [n for s in plan["stages"] for n in s["layers"]]
                self.assertEqual(covered, [l["name"] for l in prof["layers"]])


class CommandLine(unittest.TestCase):
    def test_writes_both_files_and_rejects_bad_input(self):
        with tempfile.TemporaryDirectory() as d:
            m, p = os.path.join(d, "m.json"), os.path.join(d, "p.json")
            rc = bridge_main(["torchvision:resnet18", "--input", "3,32,32", "-o", m, "--profile", p, "--reps", "1",
                              "--warmup", "0", "--forward-only"])
            self.assertEqual(rc, 0)
            with open(m) as f:
                self.assertEqual(json.load(f)["format"], "pipewright.model/1")
            with open(p) as f:
                prof = json.load(f)
            self.assertEqual(prof["micro_batch"], 2)
            self.assertTrue(all(l["backward_input_ns"] == 0 for l in prof["layers"]))
            self.assertEqual(bridge_main(["torchvision:resnet18", "--input", "3,x", "-o", os.path.join(d, "x.json")]), 2)
            self.assertEqual(bridge_main(["torchvision:nosuchnet", "--input", "3,32,32",
                                          "-o", os.path.join(d, "y.json")]), 2)
            self.assertEqual(sorted(os.listdir(d)), ["m.json", "p.json"])

    def test_progress_on_stderr_and_files_mode_0644(self):
        with tempfile.TemporaryDirectory() as d:
            m, p = os.path.join(d, "m.json"), os.path.join(d, "p.json")
            err = io.StringIO()
            old = os.umask(0o022)
            try:
                with contextlib.redirect_stderr(err):
                    rc = bridge_main(["torchvision:resnet18", "--input", "3,32,32", "-o", m, "--profile", p,
                                      "--reps", "1", "--warmup", "0", "--forward-only"])
            finally:
                os.umask(old)
            self.assertEqual(rc, 0)
            for path in (m, p):
                self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o644)
            lines = err.getvalue().splitlines()
            # resnet18 has 70 layers: a line at every 7th, the last at 70/70.
            self.assertEqual(len(lines), 10, lines)
            self.assertRegex(lines[0], r"^profile: 7/70 layers \(layer1.0.bn1\), [0-9.]+ s elapsed, about [0-9]+ s left$")
            self.assertTrue(lines[-1].startswith("profile: 70/70 layers (fc), "), lines[-1])


def run_cli(*args):
    r = subprocess.run([PW_CLI] + [str(a) for a in args], capture_output=True, text=True)
    return r


class UserModels(unittest.TestCase):
    """Token inputs, tied heads, MultiheadAttention, shared modules."""

    def test_token_model_with_tied_head_exports_from_the_command_line(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "lm.json")
            self.assertEqual(bridge_main(["tiny_models:tinylm", "--input", "16", "-o", out, "--loss", "xent"]), 0)
            with open(out) as f:
                doc = json.load(f)
        model = tiny_models.tinylm()
        kinds = {l["name"]: (l["kind"], l.get("attrs", {})) for l in doc["layers"]}
        self.assertEqual(kinds["idx"], ("input", {"seq": 16, "vocab": 64}))
        self.assertEqual(kinds["tok"], ("embedding", {"vocab": 64, "seq": 16, "d_model": 32}))
        self.assertEqual(kinds["blocks.0.attn"], ("attention", {"seq": 16, "d_model": 32, "heads": 4, "causal": 1}))
        self.assertEqual(kinds["blocks.0.mlp.1"], ("gelu", {}))
        self.assertEqual(kinds["blocks.1.ln2"], ("layer_norm", {"dim": 32}))
        self.assertEqual(kinds["head"], ("lm_head", {"seq": 16, "d_model": 32, "vocab": 64, "tied": 1}))
        self.assertEqual(doc["layers"][-1], {"name": "loss", "kind": "softmax_xent", "inputs": ["head"],
                                             "output_shape": [1], "attrs": {"rows": 16, "classes": 64}})
        self.assertEqual(sum(1 for l in doc["layers"] if l["kind"] == "residual_add"), 4)
        self.assertNotIn("opaque", [k for k, _ in kinds.values()])
        self.assertEqual(opaque_or_counted(doc), torchvision_count(model))
        check_schema(self, doc)

    def test_positions_from_an_embedding_fuse_the_same_way(self):
        a = export_model(trace(tiny_models.tinylm(), (2, 16)))
        model = tiny_models.tinylm_positions()
        graph = trace(model, (2, 16))
        b = export_model(graph)
        self.assertEqual([(l["name"], l["kind"], l.get("attrs")) for l in a["layers"]],
                         [(l["name"], l["kind"], l.get("attrs")) for l in b["layers"]])
        self.assertEqual(graph.parameter_count, torchvision_count(model))
        prof = measure_profile(graph, reps=1, warmup=0)
        check_schema(self, prof)
        tok = next(l for l in prof["layers"] if l["name"] == "tok")
        self.assertEqual(tok["parameter_bytes"], 4 * (64 + 16) * 32)
        self.assertGreater(tok["backward_weight_ns"], 0)

    def test_token_inputs_declared_by_flag(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "lm.json")
            self.assertEqual(bridge_main(["tiny_models:tinylm", "--input", "16", "--input-dtype", "long",
                                          "--vocab", "50", "-o", out]), 0)
            with open(out) as f:
                self.assertEqual(json.load(f)["layers"][0]["attrs"], {"seq": 16, "vocab": 50})
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(bridge_main(["tiny_models:tinylm", "--input", "16", "--input-dtype", "float",
                                              "-o", out]), 2)
                self.assertEqual(bridge_main(["torchvision:resnet18", "--input", "3,32,32", "--input-dtype", "long",
                                              "-o", out]), 2)
            lines = err.getvalue().splitlines()
            self.assertEqual(len(lines), 2, lines)
            self.assertTrue(lines[0].startswith("tinylm: the model fails on a float input of shape [2, 16]: "))
            self.assertEqual(lines[1], "resnet18: token inputs need a vocabulary size (--vocab): "
                                       "no nn.Embedding reads the input")

    def test_a_module_called_twice_is_counted_once_everywhere(self):
        model = tiny_models.twice_linear()
        expected = sum(p.numel() for p in model.parameters())
        self.assertEqual(expected, 33 * 33 + 33 + 33 * 2 + 2)
        graph = trace(model, (2, 33), "twice")
        doc = export_model(graph, loss="mse")
        self.assertEqual(graph.parameter_count, expected)
        second = [l for l in doc["layers"] if l.get("shares")]
        self.assertEqual([(l["name"], l["shares"]) for l in second], [("fc_1", "fc")])
        check_schema(self, doc)
        self.assertEqual(doc["layers"][-1]["kind"], "mse_loss")
        if not PW_CLI:
            self.skipTest("PW_CLI not set")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "twice.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            r = run_cli("model", path, "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["parameters"], expected)

    def test_vit_b_16_exports_and_plans(self):
        torch.manual_seed(0)
        model = tvm.vit_b_16(weights=None, image_size=32)
        graph = trace(model, (1, 3, 32, 32), "vit_b_16")
        self.assertEqual(graph.parameter_count, torchvision_count(model))
        doc = export_model(graph, loss="xent")
        kinds = [l["kind"] for l in doc["layers"]]
        self.assertEqual(kinds.count("attention"), 12)
        self.assertEqual(kinds.count("layer_norm"), 25)
        self.assertEqual(kinds.count("gelu"), 12)
        # The class token, the position table and the class-token read have no Pipewright kind.
        self.assertEqual(kinds.count("opaque"), 3)
        attn = next(l for l in doc["layers"] if l["kind"] == "attention")
        self.assertEqual(attn["attrs"], {"seq": 5, "d_model": 768, "heads": 12, "causal": 0})
        self.assertEqual(opaque_or_counted(doc), torchvision_count(model))
        prof = measure_profile(graph, reps=1, warmup=0, backward=False)
        if not PW_CLI:
            self.skipTest("PW_CLI not set")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "vit.profile.json")
            with open(path, "w") as f:
                json.dump(prof, f)
            r = run_cli("plan", "--profile", path, "--devices", 4, "--batch", 8, "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            plan = json.loads(r.stdout)
            self.assertGreaterEqual(len(plan["stages"]), 2)
            self.assertEqual([n for s in plan["stages"] for n in s["layers"]], [l["name"] for l in prof["layers"]])


@unittest.skipUnless(PW_CLI, "PW_CLI not set")
class PlanAndRunExports(unittest.TestCase):
    """Exported models: `pipewright model` counts what PyTorch counts, `plan` works analytically,
    `run` trains them with the loss falling, `plan --format torch` names submodules."""

    def export(self, d, model, shape, name, loss="xent"):
        torch.manual_seed(0)
        graph = trace(model, shape, name)
        doc = export_model(graph, loss=loss)
        self.assertEqual(graph.parameter_count, torchvision_count(model))
        path = os.path.join(d, name + ".json")
        with open(path, "w") as f:
            json.dump(doc, f)
        r = run_cli("model", path, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["parameters"], torchvision_count(model))
        return path, doc

    def plan_and_run(self, path, devices, batch, steps=5, run_flags=()):
        r = run_cli("plan", "--model", path, "--device", "cpu-core-avx2", "--devices", devices, "--batch", batch,
                    "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreaterEqual(len(json.loads(r.stdout)["stages"]), 2)
        r = run_cli("run", "--model", path, "--stages", 2, "--micro-batches", 2, "--micro-batch-size", 4,
                    "--steps", steps, "--json", *run_flags)
        self.assertEqual(r.returncode, 0, r.stderr)
        losses = json.loads(r.stdout)["losses"]
        self.assertEqual(len(losses), steps)
        self.assertLess(losses[-1], losses[0], losses)
        return losses

    def test_gpt_style_module_with_tied_head(self):
        with tempfile.TemporaryDirectory() as d:
            path, _ = self.export(d, tiny_models.tinylm(), (2, 16), "tinylm")
            self.plan_and_run(path, 4, 16)

    def test_vgg11_with_dropout_and_adaptive_pool(self):
        with tempfile.TemporaryDirectory() as d:
            path, doc = self.export(d, tvm.vgg11(weights=None), (2, 3, 224, 224), "vgg11")
            kinds = {l["name"]: (l["kind"], l.get("attrs")) for l in doc["layers"]}
            self.assertEqual(kinds["classifier.2"], ("dropout", {"permille": 500}))
            self.assertEqual(kinds["avgpool"], ("avg_pool", {"c": 512, "kernel": 1, "stride": 1, "pad": 0,
                                                             "in_h": 7, "in_w": 7}))
            self.assertNotIn("opaque", [k for k, _ in kinds.values()])
            self.plan_and_run(path, 4, 8, steps=5)

    def test_resnet18_and_its_split_points_are_module_paths(self):
        model = tvm.resnet18(weights=None, num_classes=10)
        modules = dict(model.named_modules())
        with tempfile.TemporaryDirectory() as d:
            path, doc = self.export(d, model, (2, 3, 64, 64), "resnet18")
            self.assertEqual(next(l for l in doc["layers"] if l["name"] == "avgpool")["attrs"]["kernel"], 2)
            # Adam's default rate (0.003) is too high for batch norm over 4 samples in 5 steps.
            self.plan_and_run(path, 4, 8, run_flags=("--lr", "0.0003"))
            # Where the model carries module paths the planner cuts only where a submodule call
            # begins, so every plan can be named (none is refused, none gets an fx node name).
            for devices in (2, 3, 4, 6, 8):
                r = run_cli("plan", "--model", path, "--device", "cpu-core-avx2", "--devices", devices, "--batch", 16,
                            "--straight", "--format", "torch")
                self.assertEqual(r.returncode, 0, r.stderr)
                names = re.findall(r'^    "([^"]+)": SplitPoint.BEGINNING', r.stdout, re.M)
                self.assertGreaterEqual(len(names), 1, r.stdout)
                for n in names:
                    self.assertIn(n, modules, r.stdout)
                    first = next(l for l in doc["layers"] if l.get("module") == n)
                    # The submodule's first layer is that module itself or one inside it.
                    self.assertTrue(first["name"] == n or first["name"].startswith(n + "."), (n, first["name"]))
                check_split_points(self, model, names, (2, 3, 64, 64))


def check_split_points(test, model, names, shape):
    """The split points annotate `model` as torch.distributed.pipelining does (its
    annotate_split_points resolves each name to a submodule, else raises AttributeError, and wraps
    that submodule's forward), and each annotated submodule is called in a forward pass, so each
    split takes effect. torch < 2.4 (Debian 12's 1.13) has no torch.distributed.pipelining: the
    names are then resolved the same way, by get_submodule."""
    import copy
    mod = copy.deepcopy(model).eval()
    try:
        from torch.distributed.pipelining import SplitPoint
        from torch.distributed.pipelining._IR import annotate_split_points
        annotate_split_points(mod, {n: SplitPoint.BEGINNING for n in names})
    except ImportError:
        pass
    called = set()
    for n in names:
        sub = mod.get_submodule(n)  # AttributeError when n is not a module path of the model
        forward = sub.forward

        def wrapped(*args, _n=n, _forward=forward, **kwargs):
            called.add(_n)
            return _forward(*args, **kwargs)
        sub.forward = wrapped
    with torch.no_grad():
        mod(torch.randn(*shape))
    test.assertEqual(called, set(names))

if __name__ == "__main__":
    unittest.main(verbosity=2)
