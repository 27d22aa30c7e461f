#!/usr/bin/env python3
"""Predicts a rate-limited MPI run's iteration with `pipewright simulate --uniform`.

  bench/mpi_netns_predict.py <pipewright> <run.json (--json)> <trace.json (--trace)> <rate bit/s>

Compute costs come from the run's own trace (mean F and BW op time over all devices and
steps; the uniform simulator takes one value each), the transfer time per hop from the link
rate: mean transfer bytes / (rate / 8). Prints measured median, prediction and the error.
"""
import json
import subprocess
import sys

pipewright, run_file, trace_file, rate = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
run = json.load(open(run_file))
events = [e for e in json.load(open(trace_file))["traceEvents"] if e.get("ph") == "X"]
f = [e["dur"] for e in events if e.get("cat") != "transfer" and e["name"].startswith("F")]
bw = [e["dur"] for e in events if e.get("cat") != "transfer" and e["name"].startswith("BW")]
xfer = [e["args"]["bytes"] for e in events if e.get("cat") == "transfer"]
assert f and bw and xfer, "the trace needs F, BW and transfer events (a 1f1b / gpipe run)"
t_f, t_b = sum(f) / len(f) / 1e3, sum(bw) / len(bw) / 1e3  # us -> ms
t_comm = sum(xfer) / len(xfer) / (rate / 8) * 1e3
out = subprocess.run([pipewright, "simulate", "--uniform", "--stages", str(run["workers"]), "--micro-batches",
                      str(run["micro_batches"]), "--schedule", run["schedule"], "--t-f", f"{t_f:.4f}", "--t-b",
                      f"{t_b:.4f}", "--t-comm", f"{t_comm:.4f}", "--json"], check=True, capture_output=True, text=True)
predicted = json.loads(out.stdout)
pred_ms = predicted.get("iteration_ms") or predicted["iteration_ns"] / 1e6
meas = run["iteration_ms"]
print(f"t_f {t_f:.3f} ms  t_bw {t_b:.3f} ms  t_comm {t_comm:.3f} ms  measured {meas:.2f} ms  "
      f"predicted {pred_ms:.2f} ms  measured/predicted {meas / pred_ms:.3f}")
