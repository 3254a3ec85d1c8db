#!/usr/bin/env python3
"""What the warm path of a real model does, from the daemon's own counters.

Run on the GPU machine from the repository root:

    python3 bench/warm_counters.py --build build [--runs 200] [--batch 1]

Exports torchvision ResNet-50 (random weights, dynamic batch), starts
cudaepd on the CUDA backend, loads the model through the Python client and
runs it 3 times (plan, capture, first replay), then reads `cudaepctl --json
mem`, `stats` and `sessions`, runs it --runs more times with fresh inputs in
the same region, and prints what changed: the arena's granule creations and
mappings, the device memory in use, the session's plans, graph replays and
eager runs, the bytes copied through pinned and pageable memory.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def ctl(build, sock, what):
    out = subprocess.run([os.path.join(build, "bin", "cudaepctl"), "--socket", sock,
                          "--json", what], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def snapshot(build, sock):
    mem = {(e["owner"], e["role"]): e["current"] for e in ctl(build, sock, "mem")["entries"]}
    stats = ctl(build, sock, "stats")["counters"]
    sess = ctl(build, sock, "sessions")["sessions"][0]
    return {
        "arena creates": mem.get(("arena", "creates"), 0),
        "arena maps": mem.get(("arena", "maps"), 0),
        "arena used bytes": mem.get(("arena", "used"), 0),
        "device bytes in use": mem.get(("total", "device"), 0),
        "plans cached": sess["plans"],
        "graph replays": sess["graph_replays"],
        "eager runs": sess["eager_runs"],
        "capture failures": sess["capture_failures"],
        "runs": stats["runs"],
        "bytes copied pinned": stats.get("copy_bytes_pinned", 0),
        "bytes copied pageable": stats.get("copy_bytes_pageable", 0),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--batch", type=int, default=1)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    os.environ["CUDAEP_BUILD_DIR"] = build
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    sys.path.insert(0, HERE)
    import cudaep
    import models

    work = tempfile.mkdtemp(prefix="cudaep-warm-")
    path = os.path.join(work, "resnet50.onnx")
    models.export_resnet(path)
    daemon, sock = models.start_daemon(build, work)
    rng = np.random.default_rng(0)
    try:
        with cudaep.connect(sock, name="warm") as c, c.load(path, name="resnet50") as s:
            x = rng.standard_normal((args.batch, 3, 224, 224)).astype(np.float32)
            for _ in range(3):
                s.run({"x": x}, copy=False)
            before = snapshot(build, sock)
            for _ in range(args.runs):
                x[...] = rng.standard_normal(x.shape, dtype=np.float32)
                s.run({"x": x}, copy=False)
            after = snapshot(build, sock)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
    print("ResNet-50 batch %d through cudaepd (CUDA backend): %d warm runs after 3"
          % (args.batch, args.runs))
    print("%-24s %16s %16s %12s" % ("counter", "after 3 runs", "after more", "change"))
    for k in before:
        print("%-24s %16d %16d %12d" % (k, before[k], after[k], after[k] - before[k]))


if __name__ == "__main__":
    main()
