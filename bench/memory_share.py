#!/usr/bin/env python3
"""memory_share.py — device memory of one model shared by client processes.

Starts cudaepd, builds a model whose weights are one 256 MiB float32
embedding table (Gather, then Add of a bias, then Relu: every op has a
CUDA kernel), and loads and runs it from 1 and then 4 client processes at
once (the Python client, python/cudaep). With every session loaded it
prints the daemon's `cudaepctl --json mem` (shared weights, per-client and
per-session entries, the arena) and, on a GPU, nvidia-smi's used memory.
Then one client loads and unloads the model repeatedly and the arena's
churn counters (handles created, pool hits) are printed before and after;
the daemon's idle trim runs every 100 ms, so freed granules go to the
handle pool between rounds and are mapped again from it: after the first
round, churn should create nothing.

Usage: bench/memory_share.py [--bin DIR] [--lib DIR] [--backend cuda|host]
       [--rows N] [--rounds N]
  --bin DIR   where cudaepd and cudaepctl are (default build/bin)
  --lib DIR   where libcudaep-client.so is (default build/lib)
"""
import argparse
import json
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DIM = 1024


def build_model(path, rows):
    table = np.random.default_rng(0).standard_normal((rows, DIM), dtype=np.float32)
    bias = np.linspace(-1.0, 1.0, DIM, dtype=np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0),
            helper.make_node("Add", ["emb", "bias"], ["sum"]),
            helper.make_node("Relu", ["sum"], ["y"]),
        ],
        "memory_share",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", DIM])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(bias, "bias")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return table, bias


def ctl(args, *cmd):
    out = subprocess.run([os.path.join(args.bin, "cudaepctl"), "--socket", args.socket,
                          "--json", *cmd], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def smi_used_mib():
    if shutil.which("nvidia-smi") is None:
        return None
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True)
    return int(out.stdout.split()[0]) if out.returncode == 0 else None


def client_proc(args, model, ready, done):
    """Loads and runs the model, checks one row, then holds the session
    until the parent has measured."""
    import cudaep

    with cudaep.connect(args.socket, name="memory_share") as c:
        with c.load(model) as s:
            ids = np.array([0, 5, args.rows - 1], dtype=np.int64)
            y = s.run({"ids": ids})["y"]
            ready.put((os.getpid(), float(y.sum())))
            done.wait()


def measure(args, model, n):
    ready = mp.Queue()
    done = mp.Event()
    procs = [mp.Process(target=client_proc, args=(args, model, ready, done)) for _ in range(n)]
    for p in procs:
        p.start()
    sums = [ready.get(timeout=300) for _ in procs]
    time.sleep(0.2)
    mem = ctl(args, "mem")
    used = smi_used_mib()
    done.set()
    for p in procs:
        p.join()
    return sums, mem, used


def pick(mem, owner, role):
    for e in mem["entries"]:
        if e["owner"] == owner and e["role"] == role:
            return e["current"]
    return 0


def summary(mem):
    keys = [("arena", "mapped"), ("arena", "used"), ("shared", "weights"),
            ("total", "device"), ("total", "activations"), ("arena", "creates"),
            ("arena", "pool_hits")]
    return {f"{o}/{r}": pick(mem, o, r) for o, r in keys}


def churn(args, model):
    import cudaep

    before = summary(ctl(args, "mem"))
    with cudaep.connect(args.socket, name="churn") as c:
        for i in range(args.rounds):
            with c.load(model) as s:
                s.run({"ids": np.array([i % args.rows], dtype=np.int64)})
            # Long enough for the idle trim (every 100 ms) to unmap the
            # freed granules into the handle pool.
            time.sleep(0.35)
            if i == 0:
                warm = summary(ctl(args, "mem"))
    after = summary(ctl(args, "mem"))
    return before, warm, after


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--lib", default="build/lib")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--rows", type=int, default=65536)  # 65536 x 1024 x 4 B = 256 MiB
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    os.environ["CUDAEP_CLIENT_LIB"] = os.path.join(os.path.abspath(args.lib), "libcudaep-client.so")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

    tmp = tempfile.mkdtemp(prefix="cep-mem-")
    args.socket = os.path.join(tmp, "cudaep.sock")
    model = os.path.join(tmp, "model.onnx")
    build_model(model, args.rows)
    print(f"model: {os.path.getsize(model) / 2**20:.1f} MiB file, table {args.rows}x{DIM} float32")
    base = smi_used_mib()
    log = open(os.path.join(tmp, "daemon.log"), "w")
    d = subprocess.Popen([os.path.join(args.bin, "cudaepd"), "--socket", args.socket,
                          "--backend", args.backend, "--trim-idle-ms", "100"],
                         stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(200):
            if os.path.exists(args.socket):
                break
            time.sleep(0.05)
        idle = smi_used_mib()
        print(f"nvidia-smi used MiB: before daemon {base}, daemon idle {idle}")
        results = {}
        for n in (1, 4):
            sums, mem, used = measure(args, model, n)
            assert len({round(s, 3) for _, s in sums}) == 1, sums
            results[n] = summary(mem)
            print(f"\n== {n} client process(es): nvidia-smi used {used} MiB")
            print(json.dumps(results[n], indent=1))
            sessions = [e for e in mem["entries"] if e["owner"].startswith("session:")
                        and e["role"] == "device"]
            print(f"sessions listed: {len(sessions)}")
        print("\n== 1 vs 4: shared weights", results[1]["shared/weights"], "->",
              results[4]["shared/weights"], "bytes; arena mapped", results[1]["arena/mapped"],
              "->", results[4]["arena/mapped"])
        before, warm, after = churn(args, model)
        print(f"\n== churn: {args.rounds} load/run/unload rounds in one client")
        print("before:", json.dumps(before))
        print("after round 1:", json.dumps(warm))
        print("after all:", json.dumps(after))
        print("creates after warm-up:", after["arena/creates"] - warm["arena/creates"],
              "pool hits after warm-up:", after["arena/pool_hits"] - warm["arena/pool_hits"])
        trim = ctl(args, "trim")
        print("trim:", json.dumps(trim), "nvidia-smi used", smi_used_mib(), "MiB")
        print("final:", json.dumps(summary(ctl(args, "mem"))))
    finally:
        d.terminate()
        d.wait(timeout=30)
        log.close()
        if d.returncode not in (0, -15):
            print(open(os.path.join(tmp, "daemon.log")).read())


if __name__ == "__main__":
    main()
