"""Tests of the PyTorch bridge (python/pipewright_torch): exports of torchvision models with
exact parameter counts, a small nn.Sequential layer by layer, a measured profile that
`pipewright plan --profile` plans on 4 and 8 devices. Run by ctest (python/CMakeLists.txt)
with PW_CLI naming the pipewright executable."""

import json
import os
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

PW_CLI = os.environ.get("PW_CLI", "")


def torchvision_count(model):
    return sum(p.numel() for p in model.parameters())


def opaque_or_counted(doc):
    """Parameters the model file states: analytic kinds' from their attributes, opaque layers'
    from attrs.parameters (the formulas of models/cost.cc for the kinds the bridge emits)."""
    total = 0
    for l in doc["layers"]:
        a = l.get("attrs", {})
        if l["kind"] == "conv2d":
            total += a["out_c"] * a["in_c"] * a["kernel"] ** 2 + (a["out_c"] if a.get("bias", 1) else 0)
        elif l["kind"] == "linear":
            total += a["in"] * a["out"] + (a["out"] if a.get("bias", 1) else 0)
        elif l["kind"] == "batch_norm":
            total += 2 * a["c"]
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
                 "attrs": {"in": 8, "out": 16, "bias": 1}},
                {"name": "1", "kind": "relu", "inputs": ["0"], "output_shape": [16]},
                {"name": "2", "kind": "linear", "inputs": ["1"], "output_shape": [4],
                 "attrs": {"in": 16, "out": 4, "bias": 1}},
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
