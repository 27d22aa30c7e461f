"""Every JSON file format Pipewright writes has a JSON Schema in docs/schemas/, and what the
tool writes validates against it: this test runs the commands that write each format
(PW_CLI), picks the schema by the document's "format" field, and validates with
python3-jsonschema. Also validates the JSON files under tests/data that carry a format."""

import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

import jsonschema

PW_CLI = os.environ["PW_CLI"]
SOURCE = os.environ["PW_SOURCE_DIR"]
SCHEMAS = os.path.join(SOURCE, "docs", "schemas")


def schema_for(doc):
    fmt = doc.get("format", "")
    if not fmt.startswith("pipewright.") or "/" not in fmt:
        raise AssertionError(f"no \"format\" tag: {json.dumps(doc)[:120]}")
    kind = fmt[len("pipewright."):].split("/")[0]
    path = os.path.join(SCHEMAS, f"{kind}.schema.json")
    if not os.path.exists(path):
        raise AssertionError(f"no schema {path} for format {fmt}")
    with open(path) as f:
        return json.load(f)


def validate(doc, what):
    schema = schema_for(doc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # RefResolver: deprecated in newer jsonschema
        resolver = jsonschema.RefResolver(base_uri="file://" + SCHEMAS + "/", referrer=schema)
    try:
        jsonschema.Draft7Validator(schema, resolver=resolver).validate(doc)
    except jsonschema.ValidationError as e:
        raise AssertionError(f"{what}: {e.message} at {list(e.absolute_path)}") from None
    return doc["format"]


def cli(*args):
    r = subprocess.run([PW_CLI, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"pipewright {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r.stdout


class SchemasDescribeOutputs(unittest.TestCase):
    def test_schemas_are_valid_draft7(self):
        files = sorted(glob.glob(os.path.join(SCHEMAS, "*.schema.json")))
        self.assertGreaterEqual(len(files), 10)
        for path in files:
            with open(path) as f:
                jsonschema.Draft7Validator.check_schema(json.load(f))

    def test_every_written_format_validates(self):
        seen = set()
        with tempfile.TemporaryDirectory() as d:
            p = lambda name: os.path.join(d, name)  # noqa: E731

            def check_file(path):
                with open(path) as f:
                    seen.add(validate(json.load(f), path))

            def check_stdout(out, what):
                seen.add(validate(json.loads(out), what))

            cli("model", "vgg16", "--image", "32", "--width-divisor", "8", "--classes", "10", "-o", p("model.json"))
            check_file(p("model.json"))
            cli("model", "gpt", "--layers", "4", "--d-model", "64", "--heads", "4", "--seq", "32", "--vocab", "100",
                "-o", p("gpt.json"))
            check_file(p("gpt.json"))
            check_stdout(cli("model", p("gpt.json"), "--json"), "model --json")
            check_stdout(cli("model", "resnet50", "--image", "32", "--json"), "model resnet50 --json")
            cli("profile", "--model", p("gpt.json"), "--device", "a100-80g", "--micro-batch", "2",
                "-o", p("profile.json"))
            check_file(p("profile.json"))
            check_stdout(cli("profile", "--model", p("model.json"), "--device", "v100-16g", "--micro-batch", "4", "--json"), "profile --json")
            cli("plan", "--profile", p("profile.json"), "--devices", "2", "--batch", "8", "-o", p("plan.json"))
            check_file(p("plan.json"))
            check_stdout(cli("plan", "--profile", p("profile.json"), "--devices", "2", "--batch", "8", "--json"),
                         "plan --json")
            check_stdout(cli("simulate", "--plan", p("plan.json"), "--profile", p("profile.json"), "--json",
                             "--trace", p("chrome.json")), "simulate --json")
            check_file(p("chrome.json"))
            small_gpt = ("--layers", "4", "--d-model", "64", "--heads", "4", "--seq", "32", "--vocab", "100")
            check_stdout(cli("whatif", "throughput", "--family", "gpt", *small_gpt, "--batch", "8", "-K", "1,2",
                             "-M", "2", "--json", "--no-progress"), "whatif throughput --json")
            check_stdout(cli("whatif", "max-model", "--family", "gpt", "--d-model", "64", "--heads", "4", "--seq",
                             "32", "--vocab", "100", "--batch", "8", "--devices", "1,2", "--max-layers", "64",
                             "--json", "--no-progress"), "whatif max-model --json")
            check_stdout(cli("cluster", "--device", "a100-80g", "--devices", "16", "--json"), "cluster --json")
            if "train" in cli("--help"):  # the executor is built
                check_stdout(cli("train", "--model", "gpt", *small_gpt, "--steps", "2", "--json"), "train --json")
                check_stdout(cli("run", "--model", "gpt", *small_gpt, "--stages", "2", "--micro-batches", "2",
                                 "--steps", "2", "--json", "--trace", p("run-chrome.json")), "run --json")
                check_file(p("run-chrome.json"))
                # 1 warm-up + 4 steps, the last 2 kept in full (a long run's run trace).
                cli("run", "--model", "gpt", *small_gpt, "--stages", "2", "--micro-batches", "2", "--steps", "4",
                    "--warmup-steps", "1", "--compare", "--run-trace", p("run.trace.json"), "--trace-keep", "2")
                check_file(p("run.trace.json"))
                check_stdout(cli("simulate", "--replay", p("run.trace.json"), "--json"), "simulate --replay --json")
                cli("calibrate", "-o", p("cpu.device.json"), "--sizes", "8,16", "--repeats", "1", "--copy-bytes",
                    "1MiB", "--memory", "1GiB", "--threads", "1", *small_gpt, "--layer-batch", "2",
                    "-q")
                check_file(p("cpu.device.json"))
            check_stdout(cli("simulate", "--uniform", "--stages", "2", "--micro-batches", "4", "--t-f", "1",
                             "--t-b", "1", "--json"), "simulate --uniform --json")
            with open(p("s.csv"), "w") as f:
                f.write(cli("schedule", "export", "--schedule", "zb-h1", "--stages", "2", "--micro-batches", "3"))
            check_stdout(cli("schedule", "import", p("s.csv"), "--json", "-o", p("schedule.json")), "schedule import")
            check_file(p("schedule.json"))
            spec = {"format": "pipewright.sweep/1",
                    "fixed": {"family": "gpt", "layers": 4, "d_model": 64, "heads": 4, "seq": 32, "vocab": 100,
                              "batch": 8, "device": "a100-80g"},
                    "axes": {"devices": [1, 2]}}
            with open(p("sweep.json"), "w") as f:
                json.dump(spec, f)
            check_file(p("sweep.json"))
            cli("whatif", "sweep", "--spec", p("sweep.json"), "-o", p("results"))
            check_file(p("results.json"))
            for data in glob.glob(os.path.join(SOURCE, "tests", "data", "**", "*.json"), recursive=True):
                with open(data) as f:
                    doc = json.load(f)
                if isinstance(doc, dict) and str(doc.get("format", "")).startswith("pipewright."):
                    seen.add(validate(doc, data))
        self.assertTrue({"pipewright.model/1", "pipewright.profile/1", "pipewright.plan/1", "pipewright.report/1",
                         "pipewright.schedule/1", "pipewright.sweep/1", "pipewright.sweep-result/1",
                         "pipewright.model-summary/1", "pipewright.chrome-trace/1", "pipewright.whatif-rows/1",
                         "pipewright.cluster/1"} <= seen, seen)
        if "train" in cli("--help"):
            self.assertTrue({"pipewright.run-trace/1", "pipewright.replay/1", "pipewright.run-result/1",
                             "pipewright.train-result/1", "pipewright.device/1"} <= seen, seen)

    def test_cluster_and_trace_documents(self):
        # The cluster and trace formats are read by the tool; documents it accepts validate.
        cluster = {"format": "pipewright.cluster/1", "name": "two-a100", "device": "a100-80g",
                   "levels": [{"name": "node", "count": 2, "bandwidth_bytes_per_s": 3e11, "latency_ns": 1000}]}
        validate(cluster, "cluster")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.json")
            with open(path, "w") as f:
                json.dump(cluster, f)
            cli("plan", "--model", "gpt", "--layers", "4", "--d-model", "64", "--heads", "4", "--seq", "32",
                "--vocab", "100", "--device", "a100-80g", "--cluster", path, "--batch", "8")
        trace = {"format": "pipewright.trace/1", "source": "sim", "num_devices": 1,
                 "events": [{"device": 0, "op": "F", "stage": 0, "micro_batch": 0, "iteration": 0, "start_ns": 0,
                             "end_ns": 5}], "memory": [[0, 0, 1024]]}
        validate(trace, "trace")
        bad = dict(trace, format="pipewright.trace/1", num_devices=0)
        with self.assertRaises(AssertionError):
            validate(bad, "bad trace")


if __name__ == "__main__":
    unittest.main(verbosity=2)
