"""Rewrites a plan file in place as one stage over all its layers on 2 replicas (devices 0 and 1),
with M micro-batches of batch // M samples (the MPI test scripts' replicated plans).
    python3 replicate_plan.py PLAN M [SCHEDULE]"""
import json
import sys

path, m = sys.argv[1], int(sys.argv[2])
p = json.load(open(path))
last = p["stages"][-1]["end_layer"]
p["stages"] = p["stages"][:1]
p["stages"][0].update(first_layer=0, end_layer=last, devices=[0, 1], replicas=2)
p["stages"][0].pop("layers", None)
if len(sys.argv) > 3:
    p["schedule"] = sys.argv[3]
p["num_micro_batches"], p["micro_batch_size"] = m, p["batch"] // m
p["batch"] = m * p["micro_batch_size"]
json.dump(p, open(path, "w"))
