#!/usr/bin/env python3
"""ResNet-50 and BERT-base through cudaepd against PyTorch on the same GPU.

Run on the GPU machine, from the repository root, with a built tree:

    python3 bench/models.py --build build [--iters 100] [--out DIR]

In one run it:
  1. exports torchvision ResNet-50 and a Hugging Face BERT-base (random
     weights; sequence 128; eager attention; forward(input_ids,
     attention_mask) -> last_hidden_state) with torch.onnx.export(opset 17,
     dynamo=False) and a dynamic batch dimension;
  2. starts cudaepd on the CUDA backend (a private socket and kernel cache);
  3. for each model, batch 1 and 32, fp32 (TF32 off everywhere) and fp16
     (an fp16 session of the fp32 model in cudaep; model.half() in
     PyTorch): runs cudaep-run on fixed random inputs (the timed runs
     include the copies from and to the client's shared-memory region),
     compares its outputs with PyTorch's, then times PyTorch eager and
     PyTorch replaying a CUDA graph (no transfers: inputs already on the
     GPU);
  4. prints a table of medians and ratios, last.

Latency is the median of --iters runs after warm-up: cudaep's from
cudaep-run (host clock around each synchronous run), PyTorch's from CUDA
events around each forward or graph replay. Throughput at batch 32 is
batch / median latency.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gpu"))
import cepgpu  # noqa: E402

SEQ = 128
BATCHES = (1, 32)
PRECISIONS = ("fp32", "fp16")
TOL = {"fp32": 1e-3, "fp16": 1e-2}
# Latency target: at or below PyTorch with CUDA graphs; throughput at batch
# 32: at least 1.2x PyTorch eager.
THROUGHPUT_TARGET = 1.2


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ----------------------------------------------------------------- models

def export_resnet(path):
    import torch
    import torchvision
    torch.manual_seed(0)
    m = torchvision.models.resnet50(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    torch.onnx.export(m, (x,), path, opset_version=17, dynamo=False,
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
    return m


class BertWrap:
    """Built lazily so that importing this file needs no transformers."""

    @staticmethod
    def make():
        import torch
        from transformers import BertConfig, BertModel

        class Wrap(torch.nn.Module):
            def __init__(self, bert):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask):
                return self.bert(input_ids=input_ids,
                                 attention_mask=attention_mask).last_hidden_state

        torch.manual_seed(0)
        cfg = BertConfig()  # bert-base: 12 layers, hidden 768, 12 heads
        try:
            bert = BertModel(cfg, attn_implementation="eager")
        except TypeError:
            cfg._attn_implementation = "eager"
            bert = BertModel(cfg)
        return Wrap(bert.eval()).eval()


def export_bert(path):
    import torch
    m = BertWrap.make()
    ids = torch.randint(0, 30522, (1, SEQ), dtype=torch.int64)
    mask = torch.ones(1, SEQ, dtype=torch.int64)
    torch.onnx.export(m, (ids, mask), path, opset_version=17, dynamo=False,
                      input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state"],
                      dynamic_axes={"input_ids": {0: "batch"},
                                    "attention_mask": {0: "batch"},
                                    "last_hidden_state": {0: "batch"}})
    return m


def inputs_for(model, batch, rng):
    if model == "resnet50":
        return {"x": rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)}
    ids = rng.integers(0, 30522, (batch, SEQ), dtype=np.int64)
    mask = np.ones((batch, SEQ), dtype=np.int64)
    # Padding at the end of every other sequence exercises the mask.
    mask[1::2, SEQ * 3 // 4:] = 0
    return {"input_ids": ids, "attention_mask": mask}


# ---------------------------------------------------------------- PyTorch

class _capturable_scalars:
    """While a CUDA graph captures: torch.tensor(scalar, device=cuda) made
    with a fill kernel instead of a copy from pageable host memory, which
    a capture refuses (transformers' BERT mask builds one on each
    forward). The same values; only how they reach the device differs."""

    def __init__(self, torch):
        self.torch = torch

    def __enter__(self):
        torch = self.torch
        self.orig = orig = torch.tensor

        def tensor(data, *a, **kw):
            dev = kw.get("device")
            if dev is not None and torch.device(dev).type == "cuda" and not a and \
                    isinstance(data, (int, float, bool)):
                return torch.full((), data, device=dev, dtype=kw.get("dtype"))
            return orig(data, *a, **kw)
        torch.tensor = tensor
        return self

    def __exit__(self, *exc):
        self.torch.tensor = self.orig


def torch_times(m, feeds, prec, iters):
    """Median ms of eager forwards and of CUDA-graph replays, and the
    output (float32 numpy) of the eager forward."""
    import torch
    dev = torch.device("cuda")
    mm = m.to(dev)
    mm = mm.half() if prec == "fp16" else mm.float()
    args = []
    for v in feeds.values():
        t = torch.from_numpy(v).to(dev)
        if t.is_floating_point() and prec == "fp16":
            t = t.half()
        args.append(t)
    with torch.inference_mode():
        out = mm(*args)
        for _ in range(10):
            mm(*args)
        torch.cuda.synchronize()
        eager = []
        for _ in range(iters):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            mm(*args)
            b.record()
            b.synchronize()
            eager.append(a.elapsed_time(b))
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                mm(*args)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g), _capturable_scalars(torch):
            mm(*args)
        for _ in range(10):
            g.replay()
        torch.cuda.synchronize()
        graph = []
        for _ in range(iters):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            graph.append(a.elapsed_time(b))
    res = out.float().cpu().numpy()
    mm.to("cpu").float()
    del g
    torch.cuda.empty_cache()
    return float(np.median(eager)), float(np.median(graph)), res


# ----------------------------------------------------------------- cudaep
# The daemon, cudaep-run and the error measures are tests/gpu/cepgpu.py's,
# shared with the model zoo (tests/gpu/zoo.py).

# ------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--out", default=None, help="keep models, logs and results here")
    ap.add_argument("--models", default="resnet50,bert")
    ap.add_argument("--export-only", metavar="DIR",
                    help="only write the models as DIR/<model>.onnx (for bench/profile)")
    args = ap.parse_args()
    if args.export_only:
        os.makedirs(args.export_only, exist_ok=True)
        for model in args.models.split(","):
            path = os.path.join(args.export_only, model + ".onnx")
            export_resnet(path) if model == "resnet50" else export_bert(path)
            log("%s: %s" % (model, path))
        return

    torch = cepgpu.torch_setup()

    work = args.out or tempfile.mkdtemp(prefix="cudaep-models-")
    os.makedirs(work, exist_ok=True)
    build = os.path.abspath(args.build)
    rng = np.random.default_rng(1234)
    daemon = cepgpu.Daemon(build, work).start()
    rows = []
    try:
        for model in args.models.split(","):
            path = os.path.join(work, model + ".onnx")
            t0 = time.time()
            m = export_resnet(path) if model == "resnet50" else export_bert(path)
            log("%s: exported in %.1f s (%d MB)" % (model, time.time() - t0,
                                                    os.path.getsize(path) >> 20))
            out_name = "logits" if model == "resnet50" else "last_hidden_state"
            for prec in PRECISIONS:
                for batch in BATCHES:
                    feeds = inputs_for(model, batch, rng)
                    tag = "%s-%s-b%d" % (model, prec, batch)
                    r = cepgpu.cudaep_run(build, daemon.sock, path, feeds, [out_name], prec,
                                          args.iters, 10, work, tag, timeout=900)
                    try:
                        eager, graph, ref = torch_times(m, feeds, prec, args.iters)
                    except Exception as e:  # one cell's failure is reported, not fatal
                        log("%s: PyTorch failed: %r" % (tag, e))
                        eager = graph = float("nan")
                        ref = None
                    row = {"model": model, "precision": prec, "batch": batch,
                           "torch_eager_ms": eager, "torch_graph_ms": graph}
                    if not r.ok:
                        row["error"] = ("%s: %s" % (r.stage, r.message))[-400:]
                    else:
                        row["cudaep_ms"] = r.median_ms
                        row["first_ms"] = r.first_ms
                        row["rel_err"] = cepgpu.rel_l2(r.outputs[0], ref) \
                            if ref is not None else float("nan")
                    rows.append(row)
                    log(json.dumps(row))
    finally:
        daemon.stop(timeout=30)
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump(rows, f, indent=1)

    print()
    print("GPU: %s; torch %s; %d timed runs per cell, medians"
          % (torch.cuda.get_device_name(0), torch.__version__, args.iters))
    hdr = ("model", "prec", "batch", "cudaep ms", "torch ms", "graph ms",
           "vs graph", "thrpt/eager", "rel err", "targets")
    print("%-9s %-5s %5s %10s %9s %9s %9s %11s %9s  %s" % hdr)
    for r in rows:
        if "error" in r:
            print("%-9s %-5s %5d %10s %9.3f %9.3f  error: %s"
                  % (r["model"], r["precision"], r["batch"], "-", r["torch_eager_ms"],
                     r["torch_graph_ms"], r["error"][:200]))
            continue
        vs_graph = r["cudaep_ms"] / r["torch_graph_ms"]
        thr = r["torch_eager_ms"] / r["cudaep_ms"]
        ok_lat = vs_graph <= 1.0
        ok_thr = r["batch"] < 32 or thr >= THROUGHPUT_TARGET
        ok_err = r["rel_err"] <= TOL[r["precision"]]
        verdict = []
        verdict.append("latency ok" if ok_lat else "latency MISS")
        if r["batch"] == 32:
            verdict.append("throughput ok" if ok_thr else "throughput MISS")
        verdict.append("accuracy ok" if ok_err else "accuracy FAIL")
        print("%-9s %-5s %5d %10.3f %9.3f %9.3f %8.2fx %10.2fx %9.1e  %s"
              % (r["model"], r["precision"], r["batch"], r["cudaep_ms"],
                 r["torch_eager_ms"], r["torch_graph_ms"], vs_graph, thr,
                 r["rel_err"], ", ".join(verdict)))
    if not args.out:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
