#!/usr/bin/env python3
"""The device check's summary (tools/gpu_check.sh): OUT/summary.json from the steps so far and
the per-case files in DETAILS, written atomically after every step so that a run stopped at any
point (its time limit, a hang) still leaves what it had measured.

  gpu_check_summary.py STEPS.tsv OUT DETAILS MODE GPU ARCH SECONDS [--table]

STEPS.tsv: one line per step: name, exit status, seconds, verdict, note (tab-separated).
A per-case file that is missing or not valid JSON (a step killed while writing) counts as absent.
--table: the run's end: the summary is complete; also print the short table (the run's last
output) and exit 1 unless every step passed. Without it, "complete" is false and so is "ok".
"""
import json
import os
import sys

OK_VERDICTS = ("pass", "skipped (expected)", "refused (expected)", "stopped (optional)")


def load(details, name):
    try:
        with open(os.path.join(details, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fidelity_of(pred, dev):
    """GPT-2 small predicted from the device file, per layer kind (F + B + W summed over the
    model's layers of that kind) beside calibrate's timing of one layer of each kind times the
    model's count of that kind."""
    if not pred or not dev:
        return None
    kinds = {}
    for layer in pred.get("layers", []):
        k = kinds.setdefault(layer["kind"], {"count": 0, "predicted_ms": 0.0})
        k["count"] += 1
        k["predicted_ms"] += (layer["forward_ns"] + layer["backward_input_ns"] + layer["backward_weight_ns"]) / 1e6
    for m in dev.get("layers", []):
        if m["kind"] in kinds:
            k = kinds[m["kind"]]
            k["measured_ms"] = k["count"] * (m["forward_s"] + m["backward_input_s"] + m["backward_weight_s"]) * 1e3
    return {"kinds": kinds, "predicted_step_ms": sum(k["predicted_ms"] for k in kinds.values())}


def summarize(steps_file, details, mode, gpu, arch, seconds, complete):
    steps = []
    with open(steps_file) as f:
        for line in f:
            name, status, secs, verdict, note = line.rstrip("\n").split("\t")
            steps.append({"step": name, "exit": status, "seconds": int(secs), "verdict": verdict, "note": note})
    s = {"format": "pipewright.gpu-check/1", "mode": mode, "gpu": gpu, "cuda_architectures": arch,
         "seconds": int(seconds), "steps": steps}
    for key, name in (("gemm_pipewright", "gemm_pipewright.json"), ("torch_gpt", "torch_gpt.json"),
                      ("pipewright_gpt", "pipewright_gpt.json"), ("pipewright_gpt_tf32", "pipewright_gpt_tf32.json"),
                      ("device", "device.json"), ("predicted_gpt", "predicted_gpt.json")):
        s[key] = load(details, name)
    s["fidelity"] = fidelity_of(s["predicted_gpt"], s["device"])
    compare = {}
    for n in (1, 4):
        c = load(details, f"compare_{n}.json")
        if c:
            compare[str(n)] = {k: c.get(k) for k in ("predicted_iteration_ms", "iteration_ms",
                                                     "predicted_shared_iteration_ms", "compare_note",
                                                     "device_memory", "profile_device")}
    s["compare"] = compare
    gpt = s["pipewright_gpt"]
    s["pipewright_gpt_step_ms"] = gpt.get("step_ms") if gpt else None
    s["complete"] = complete
    s["ok"] = complete and bool(steps) and all(x["verdict"] in OK_VERDICTS for x in steps)
    return s


def print_table(s):
    print(f"\n{'step':<52} {'verdict':<20} {'s':>4}  note")
    for x in s["steps"]:
        print(f"{x['step']:<52} {x['verdict']:<20} {x['seconds']:>4}  {x['note'][:70]}")
    g, t = s["gemm_pipewright"], s["torch_gpt"]
    if g and t and t.get("gemm"):
        tm = {(x["name"], x["tf32"]): x for x in t["gemm"]}
        print(f"\n{'GEMM':<10} {'tf32':<5} {'ours ms':>8} {'torch ms':>9} {'torch/ours':>10}")
        for x in g["gemm"]:
            y = tm.get((x["name"], x["tf32"]))
            if y:
                print(f"{x['name']:<10} {str(x['tf32']):<5} {x['ms']:>8.3f} {y['ms']:>9.3f} {y['ms'] / x['ms']:>10.2f}")
    if t:
        for m in t.get("modes", []):
            print(f"torch {m['mode']:<8} {m['step_ms']:9.1f} ms/step")
    if s["pipewright_gpt_step_ms"] is not None:
        print(f"pipewright fp32  {s['pipewright_gpt_step_ms']:9.1f} ms/step (train --device cuda, median of 13)")
    if s["pipewright_gpt_tf32"]:
        print(f"pipewright tf32  {s['pipewright_gpt_tf32']['step_ms']:9.1f} ms/step (train --device cuda --tf32)")
    gpt = s["pipewright_gpt"]
    if gpt and gpt.get("predicted_peak_memory_bytes") and gpt.get("peak_memory_bytes"):
        m, pm = gpt["peak_memory_bytes"], gpt["predicted_peak_memory_bytes"]
        print(f"pipewright peak device memory {m / 2**30:.2f} GiB, memory model {pm / 2**30:.2f} GiB ({m / pm:.3f}x)")
    for n, c in s["compare"].items():
        if c["predicted_iteration_ms"] and c["iteration_ms"]:
            e = c["predicted_iteration_ms"] / c["iteration_ms"] - 1
            print(f"run --compare {n} stream(s): predicted {c['predicted_iteration_ms']:.2f} ms, measured "
                  f"{c['iteration_ms']:.2f} ms ({100 * e:+.1f}%)")
    fid = s["fidelity"]
    if fid:
        print(f"\n{'layer kind':<18} {'n':>3} {'predicted ms':>13} {'measured ms':>12}")
        for name, k in fid["kinds"].items():
            meas = f"{k['measured_ms']:12.2f}" if "measured_ms" in k else f"{'-':>12}"
            print(f"{name:<18} {k['count']:>3} {k['predicted_ms']:13.2f} {meas}")
        line = f"predicted step (layers, no optimizer) {fid['predicted_step_ms']:.1f} ms"
        if s["pipewright_gpt_step_ms"] is not None:
            line += f"; measured {s['pipewright_gpt_step_ms']:.1f} ms"
        print(line)


def main(argv):
    if len(argv) not in (8, 9) or (len(argv) == 9 and argv[8] != "--table"):
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    steps_file, out, details, mode, gpu, arch, seconds = argv[1:8]
    s = summarize(steps_file, details, mode, gpu, arch, seconds, complete=len(argv) == 9)
    tmp = os.path.join(out, "summary.json.tmp")
    with open(tmp, "w") as f:
        json.dump(s, f, indent=1)
    os.replace(tmp, os.path.join(out, "summary.json"))
    if len(argv) == 9:
        print_table(s)
        print(f"\n{mode} run, {seconds} s, {'OK' if s['ok'] else 'FAILED'}; summary.json, log.txt and "
              f"details.tar.gz in {out}")
        return 0 if s["ok"] else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
