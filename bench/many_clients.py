#!/usr/bin/env python3
"""N client processes sharing one cudaepd, against N PyTorch processes.

Run on the GPU machine, from the repository root, with a built tree:

    python3 bench/many_clients.py --build build [--clients 1,4,8,16]
                                   [--seconds 10] [--precision tf32]

For each N it starts N processes that each load the same ONNX model
(torchvision ResNet-50, random weights, exported with a dynamic batch)
through one cudaepd on the CUDA backend, warm up, meet at a barrier, then
run batch-1 inferences back to back for --seconds, counting completed runs
(every run copies its input from the process's shared-memory region and
its output back); once with sessions as they are, once with sessions
loaded with batching=True, whose runs the daemon merges across clients. Then N PyTorch processes each run the same model at
batch 1 by replaying a CUDA graph for the same time. Reported per N:
aggregate runs/s of each, and GPU memory in use (nvidia-smi's memory.used
for the whole GPU, sampled during the timed phase, minus what was in use
before anything started).
"""
import argparse
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402  (bench/models.py: the export and the daemon)

HERE = os.path.dirname(os.path.abspath(__file__))


BATCH_KEYS = ("batches", "batch_runs", "batch_alone", "batch_size_2", "batch_size_3_4",
              "batch_size_5_8", "batch_size_9_16", "batch_size_17_32", "batch_size_33_up")


def daemon_counters(build, sock):
    """The daemon's counters (cudaepctl --json stats), a dict."""
    r = subprocess.run([os.path.join(build, "bin", "cudaepctl"), "--socket", sock, "--json",
                        "stats"], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["counters"]


def gpu_used_mib():
    r = subprocess.run(["nvidia-smi", "--query-gpu=memory.used",
                        "--format=csv,noheader,nounits"], capture_output=True, text=True)
    return int(r.stdout.split()[0])


def cudaep_worker(build, sock, path, precision, batching, seconds, barrier, result, idx):
    os.environ["CUDAEP_BUILD_DIR"] = build
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    import cudaep
    x = np.random.default_rng(idx).standard_normal((1, 3, 224, 224)).astype(np.float32)
    try:
        cudaep_loop(cudaep, sock, path, precision, batching, seconds, barrier, result, idx, x)
    except BaseException:
        barrier.abort()  # the phase fails now instead of at the barrier's timeout
        raise


def cudaep_loop(cudaep, sock, path, precision, batching, seconds, barrier, result, idx, x):
    with cudaep.connect(sock, name="bench-%d" % idx) as c:
        with c.load(path, precision=precision, batching=batching) as s:
            for _ in range(20):
                s.run({"x": x}, copy=False)
            barrier.wait()
            n, end = 0, time.perf_counter() + seconds
            while time.perf_counter() < end:
                s.run({"x": x}, copy=False)
                n += 1
            result[idx] = n
            barrier.wait()  # hold the session until memory is sampled


def torch_worker(precision, seconds, barrier, result, idx):
    import torch
    import torchvision
    torch.manual_seed(0)
    # PyTorch's defaults let cuDNN convolutions use TF32 (and not matmuls):
    # "tf32" keeps them; "fp32" turns TF32 off; "fp16" runs the model in half.
    torch.backends.cudnn.allow_tf32 = precision != "fp32"
    dt = torch.float16 if precision == "fp16" else torch.float32
    m = torchvision.models.resnet50(weights=None).eval().cuda().to(dt)
    x = torch.randn(1, 3, 224, 224, device="cuda", dtype=dt)
    with torch.inference_mode():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                m(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            m(x)
        for _ in range(20):
            g.replay()
        torch.cuda.synchronize()
        barrier.wait()
        n, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            g.replay()
            torch.cuda.synchronize()
            n += 1
        result[idx] = n
        barrier.wait()


def phase(target, args, n, seconds):
    """Runs n workers; returns (runs/s aggregate, MiB in use while timed)."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(n + 1)
    result = ctx.Array("l", n)
    procs = [ctx.Process(target=target, args=args + (seconds, barrier, result, i))
             for i in range(n)]
    for p in procs:
        p.start()
    barrier.wait(timeout=600)
    time.sleep(seconds / 2)
    used = gpu_used_mib()
    barrier.wait(timeout=600 + seconds)
    for p in procs:
        p.join(timeout=120)
    return sum(result) / seconds, used


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--clients", default="1,4,8,16")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--precision", default="tf32", choices=["fp32", "tf32", "fp16"],
                    help="both sides: tf32 (default) is PyTorch's default for "
                    "convolutions, fp32 has TF32 off, fp16 runs in half")
    ap.add_argument("--modes", default="cudaep,batched,pytorch",
                    help="which columns to measure (comma-separated)")
    ap.add_argument("--batch-window-us", type=int, default=None,
                    help="the daemon's batch_window_us (default: its own default)")
    args = ap.parse_args()
    modes = args.modes.split(",")
    build = os.path.abspath(args.build)
    work = tempfile.mkdtemp(prefix="cudaep-many-")
    path = os.path.join(work, "resnet50.onnx")
    models.export_resnet(path)
    base = gpu_used_mib()
    extra = [] if args.batch_window_us is None else ["--batch-window-us",
                                                     str(args.batch_window_us)]
    daemon, sock = models.start_daemon(build, work, extra)
    rows = []
    try:
        for batching in (False, True):
            who = "batched" if batching else "cudaep"
            if who not in modes:
                continue
            for n in [int(v) for v in args.clients.split(",")]:
                before = daemon_counters(build, sock)
                rate, used = phase(cudaep_worker, (build, sock, path, args.precision, batching),
                                   n, args.seconds)
                rows.append((who, n, rate, used - base))
                print("%-7s N=%2d  %8.0f runs/s  %6d MiB" % ((who,) + rows[-1][1:]),
                      file=sys.stderr)
                if batching:
                    # What the daemon merged in this phase (warm-up included).
                    after = daemon_counters(build, sock)
                    print("        " + ", ".join("%s %d" % (k, after.get(k, 0) - before.get(k, 0))
                                             for k in BATCH_KEYS), file=sys.stderr)
    except BaseException:
        # What the daemon said is the first thing to read when a phase fails.
        with open(os.path.join(work, "cudaepd.log"), errors="replace") as f:
            print("cudaepd's log, last 40 lines:\n" + "".join(f.readlines()[-40:]),
                  file=sys.stderr)
        raise
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
    for n in [int(v) for v in args.clients.split(",")] if "pytorch" in modes else []:
        rate, used = phase(torch_worker, (args.precision,), n, args.seconds)
        rows.append(("pytorch", n, rate, used - base))
        print("pytorch N=%2d  %8.0f runs/s  %6d MiB" % rows[-1][1:], file=sys.stderr)

    print()
    print("ResNet-50 batch 1, %s, %.0f s per cell; GPU memory in use above the idle %d MiB"
          % (args.precision, args.seconds, base))
    print("%-4s %14s %11s %15s %12s %15s %12s %9s %9s %10s"
          % ("N", "cudaep runs/s", "cudaep MiB", "batched runs/s", "batched MiB",
             "pytorch runs/s", "pytorch MiB", "thrpt x", "batch x", "mem vs N=1"))
    got = {(who, n): (r, m) for who, n, r, m in rows}
    ns = sorted({n for who, n, r, m in rows})
    one = got.get(("cudaep", min(ns)), (0, 0))[1] if ns else 0
    for n in ns:
        r, m = got.get(("cudaep", n), (0, 0))
        br, bm = got.get(("batched", n), (0, 0))
        tr, tm = got.get(("pytorch", n), (0, 0))
        print("%-4d %14.0f %11d %15.0f %12d %15.0f %12d %8.2fx %8.2fx %9.2fx"
              % (n, r, m, br, bm, tr, tm, r / tr if tr else 0, br / tr if tr else 0,
                 max(m, bm) / one if one else 0))
    print("thrpt x / batch x: aggregate runs/s over the PyTorch processes' without / "
          "with cross-client batching; mem vs N=1: the larger of the two cudaep "
          "figures over one client's")

if __name__ == "__main__":
    main()
