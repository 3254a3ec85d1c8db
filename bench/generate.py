#!/usr/bin/env python3
"""Generation through cudaepd against transformers generate() on the same GPU.

Run on the GPU machine, from the repository root, with a built tree:

    python3 bench/generate.py --build build [--models gpt2] [--new 128]
                              [--prompt 128] [--precisions fp32,fp16] [--out DIR]

In one run it:
  1. builds each model from a transformers configuration with random
     weights (gpt2: GPT-2 small) and exports it in the Hugging Face
     interface (inputs input_ids, attention_mask, position_ids and
     past_key_values.N.key/value; outputs logits and present.N.key/value):
     transformers' own forward through torch.export (dynamo=True, opset
     18), or, where that fails, GPT-2's blocks with their own weights and
     the attention written out plainly (torch.cat on the cache, the masks
     from the shapes and attention_mask) through the tracer (opset 17);
  2. checks the export with onnxruntime (CPU) at two cache lengths against
     PyTorch, so that a length baked in by the tracer shows up here;
  3. starts cudaepd on the CUDA backend and, per precision (an fp16 or bf16
     session of the fp32 file), generates --new tokens greedily from a
     random prompt of --prompt tokens with Session.generate(stream=True),
     timing each token's arrival in the client;
  4. runs transformers generate() (greedy, use_cache, eager attention) on
     the same prompt in the same precision and, in fp32, compares the
     tokens one for one;
  5. prints a table last: decode tokens/s (tokens after the first over the
     time after it), time to first token, inter-token latency p50/p99, and
     transformers' tokens/s (new tokens over generate()'s wall time, best
     of 3) and its time to first token (generate() of 1 token).

Not measured yet (issue 18): transformers with a compiled static cache,
16 clients at once, the Llama- and Qwen-shaped models.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, "..", "tests", "gpu"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import cepgpu  # noqa: E402


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def build_model(name, torch):
    import transformers
    torch.manual_seed(0)
    if name == "gpt2":
        cfg = transformers.GPT2Config()
    else:
        raise SystemExit("unknown model %s" % name)
    cfg = cepgpu.hf_eager(cfg)
    m = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    # Random values everywhere (some heads start at zero).
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0.0, 0.02)
    return m, cfg


def _cache_new(past, n_layers):
    from transformers import DynamicCache
    c = DynamicCache()
    for i in range(n_layers):
        c.update(past[2 * i], past[2 * i + 1], i)
    return c


def _cache_tensors(cache, n_layers):
    out = []
    for i in range(n_layers):
        if hasattr(cache, "layers"):
            out += [cache.layers[i].keys, cache.layers[i].values]
        else:
            out += [cache.key_cache[i], cache.value_cache[i]]
    return out


def plain_gpt2(model, torch):
    """GPT-2 written out as a plain module over transformers' weights (for
    an exporter that cannot follow transformers' cache objects): the cache
    appended with torch.cat, the causal mask made from the shapes and the
    padding mask from attention_mask, as exporters of older transformers
    wrote it."""
    import math
    t = model.transformer
    cfg = model.config
    H, D = cfg.n_head, cfg.n_embd // cfg.n_head

    class Plain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.t = t
            self.lm = model.lm_head

        def forward(self, input_ids, attention_mask, position_ids, *past):
            h = self.t.wte(input_ids) + self.t.wpe(position_ids)
            b, s = input_ids.shape[0], input_ids.shape[1]
            pad = (1.0 - attention_mask[:, None, None, :].to(h.dtype)) * -1e9
            presents = []
            for i, blk in enumerate(self.t.h):
                a = blk.ln_1(h)
                q, k, v = blk.attn.c_attn(a).split(cfg.n_embd, dim=2)
                q = q.view(b, s, H, D).transpose(1, 2)
                k = torch.cat([past[2 * i], k.view(b, s, H, D).transpose(1, 2)], dim=2)
                v = torch.cat([past[2 * i + 1], v.view(b, s, H, D).transpose(1, 2)], dim=2)
                presents += [k, v]
                T = k.shape[2]
                rows = torch.arange(s).unsqueeze(1) + (T - s)
                causal = torch.where(torch.arange(T).unsqueeze(0) <= rows,
                                     torch.zeros((), dtype=h.dtype),
                                     torch.full((), -1e9, dtype=h.dtype))
                w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D) + causal + pad
                ctx = torch.matmul(torch.softmax(w, dim=-1), v)
                ctx = ctx.transpose(1, 2).reshape(b, s, cfg.n_embd)
                h = h + blk.attn.c_proj(ctx)
                h = h + blk.mlp(blk.ln_2(h))
            return (self.lm(self.t.ln_f(h)), *presents)

    return Plain().eval()


def export(model, cfg, path, torch, how):
    """Exports the model in the Hugging Face interface: "dynamo" is
    transformers' own forward through torch.export, "plain" plain_gpt2()
    through the tracer."""
    n_layers = cfg.num_hidden_layers
    heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    hd = cfg.hidden_size // cfg.num_attention_heads

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, position_ids, *past):
            out = self.m(input_ids=input_ids, attention_mask=attention_mask,
                         position_ids=position_ids,
                         past_key_values=_cache_new(past, n_layers), use_cache=True)
            return (out.logits, *_cache_tensors(out.past_key_values, n_layers))

    wrap = Wrap(model).eval() if how == "dynamo" else plain_gpt2(model, torch)
    past_len, seq = 5, 3
    ids = torch.randint(0, cfg.vocab_size, (1, seq))
    mask = torch.ones(1, past_len + seq, dtype=torch.int64)
    pos = torch.arange(past_len, past_len + seq).unsqueeze(0)
    past = [torch.randn(1, heads, past_len, hd) for _ in range(2 * n_layers)]
    in_names = ["input_ids", "attention_mask", "position_ids"]
    out_names = ["logits"]
    axes = {"input_ids": {0: "batch", 1: "sequence_length"},
            "attention_mask": {0: "batch", 1: "total_sequence_length"},
            "position_ids": {0: "batch", 1: "sequence_length"},
            "logits": {0: "batch", 1: "sequence_length"}}
    for i in range(n_layers):
        for kv in ("key", "value"):
            a = "past_key_values.%d.%s" % (i, kv)
            b = "present.%d.%s" % (i, kv)
            in_names.append(a)
            out_names.append(b)
            axes[a] = {0: "batch", 2: "past_sequence_length"}
            axes[b] = {0: "batch", 2: "total_sequence_length"}
    args = (ids, mask, pos, *past)
    with torch.no_grad():
        if how == "dynamo":
            auto = torch.export.Dim.AUTO
            shapes = ({1: auto}, {1: auto}, {1: auto}) + tuple({2: auto} for _ in past)
            torch.onnx.export(wrap, args, path, opset_version=18, input_names=in_names,
                              output_names=out_names, dynamic_shapes=shapes, dynamo=True)
        else:
            torch.onnx.export(wrap, args, path, opset_version=17, input_names=in_names,
                              output_names=out_names, dynamic_axes=axes, dynamo=False)
    return wrap, (heads, hd, n_layers)


def check_export(path, wrap, shape, vocab, torch):
    """The export against PyTorch at two cache lengths, in onnxruntime."""
    import onnxruntime as ort
    heads, hd, n_layers = shape
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    worst = 0.0
    for past_len, seq in ((7, 4), (12, 1)):
        ids = torch.randint(0, vocab, (1, seq))
        mask = torch.ones(1, past_len + seq, dtype=torch.int64)
        pos = torch.arange(past_len, past_len + seq).unsqueeze(0)
        past = [torch.randn(1, heads, past_len, hd) for _ in range(2 * n_layers)]
        with torch.no_grad():
            ref = wrap(ids, mask, pos, *past)[0].numpy()
        feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(),
                 "position_ids": pos.numpy()}
        for i in range(n_layers):
            feeds["past_key_values.%d.key" % i] = past[2 * i].numpy()
            feeds["past_key_values.%d.value" % i] = past[2 * i + 1].numpy()
        got = s.run(["logits"], feeds)[0]
        worst = max(worst, cepgpu.rel_l2(got, ref))
    return worst


def hf_generate(model, prompt, new, prec, torch):
    dt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[prec]
    m = model.to("cuda", dt)
    ids = torch.tensor([prompt], device="cuda")
    kw = dict(do_sample=False, use_cache=True, pad_token_id=0)
    with torch.no_grad():
        out = m.generate(ids, max_new_tokens=new, min_new_tokens=new, **kw)
        times = []
        for _ in range(3):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            m.generate(ids, max_new_tokens=new, min_new_tokens=new, **kw)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        ttft = []
        for _ in range(3):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            m.generate(ids, max_new_tokens=1, min_new_tokens=1, **kw)
            torch.cuda.synchronize()
            ttft.append(time.perf_counter() - t0)
    model.to("cpu", torch.float32)
    return out[0, len(prompt):].tolist(), new / min(times), min(ttft) * 1e3


def cudaep_generate(sock, path, prompt, new, prec):
    import cudaep  # noqa: E402 (CUDAEP_BUILD_DIR is set first, in main)
    c = cudaep.Client(socket=sock, name="bench-generate")
    try:
        s = c.load(path, precision=prec)
        # A warm-up generation of the same length: kernels, the plans for
        # this capacity and the decode step's graph.
        s.generate(prompt, max_new_tokens=new)
        t0 = time.perf_counter()
        arrivals, toks = [], []
        for t in s.generate(prompt, max_new_tokens=new, stream=True):
            arrivals.append(time.perf_counter())
            toks.append(int(t))
        itl = np.diff(np.array(arrivals)) * 1e3
        res = {"tokens": toks, "ttft_ms": (arrivals[0] - t0) * 1e3,
               "decode_tps": (len(toks) - 1) / (arrivals[-1] - arrivals[0]),
               "itl_p50_ms": float(np.percentile(itl, 50)),
               "itl_p99_ms": float(np.percentile(itl, 99))}
        s.close()
        return res
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--models", default="gpt2")
    ap.add_argument("--precisions", default="fp32,fp16")
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    os.environ["CUDAEP_BUILD_DIR"] = os.path.abspath(a.build)
    torch = cepgpu.torch_setup()
    work = a.out or tempfile.mkdtemp(prefix="cudaep-gen-")
    os.makedirs(work, exist_ok=True)
    rows = []
    daemon = cepgpu.Daemon(a.build, os.path.join(work, "daemon")).start()
    try:
        for name in a.models.split(","):
            model, cfg = build_model(name, torch)
            path = os.path.join(work, name + ".onnx")
            err, how = None, None
            # transformers' own forward through torch.export first; where it
            # fails, GPT-2 written out plainly through the tracer.
            for how in ("dynamo", "plain"):
                t0 = time.perf_counter()
                try:
                    wrap, shape = export(model, cfg, path, torch, how)
                    err = check_export(path, wrap, shape, cfg.vocab_size, torch)
                except Exception as e:  # the other way may do
                    log("%s: %s export failed: %s" % (name, how, str(e).splitlines()[0]))
                    err = None
                    continue
                log("%s: %s export in %.1f s; onnxruntime against PyTorch at two cache "
                    "lengths: rel %.2e" % (name, how, time.perf_counter() - t0, err))
                if err < 1e-3:
                    break
            if err is None or err >= 1e-3:
                rows.append({"model": name, "precision": "-",
                             "error": "no export matches PyTorch (rel %s)" % err})
                continue
            rng = np.random.default_rng(0)
            prompt = rng.integers(0, cfg.vocab_size, a.prompt).tolist()
            for prec in a.precisions.split(","):
                row = {"model": name, "precision": prec, "export_rel": err, "export": how}
                try:
                    row.update(cudaep_generate(daemon.sock, path, prompt, a.new, prec))
                except Exception as e:  # reported in the table, the run goes on
                    row["error"] = "cudaep: %s" % e
                    log(row["error"], daemon.log_tail(5))
                ref, tps, ttft = hf_generate(model, prompt, a.new, prec, torch)
                row["hf_tps"], row["hf_ttft_ms"] = tps, ttft
                if "tokens" in row:
                    same = 0
                    while same < min(len(ref), len(row["tokens"])) and \
                            ref[same] == row["tokens"][same]:
                        same += 1
                    row["same_prefix"] = same
                    del row["tokens"]
                rows.append(row)
                log(json.dumps(row))
    finally:
        daemon.stop()
    with open(os.path.join(work, "generate.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print("\n%-6s %-5s %9s %8s %8s %8s %9s %9s %6s" % (
        "model", "prec", "tok/s", "ttft ms", "itl p50", "itl p99", "hf tok/s", "hf ttft",
        "same"))
    for r in rows:
        if "error" in r:
            print("%-6s %-5s %s" % (r["model"], r["precision"], r["error"]))
            continue
        print("%-6s %-5s %9.1f %8.2f %8.3f %8.3f %9.1f %9.2f %6s" % (
            r["model"], r["precision"], r["decode_tps"], r["ttft_ms"], r["itl_p50_ms"],
            r["itl_p99_ms"], r["hf_tps"], r["hf_ttft_ms"],
            "%d/%d" % (r["same_prefix"], a.new)))
    print("cudaep: decode tokens/s = (tokens - 1) / (last arrival - first) in the client; "
          "hf: new tokens / generate() wall time, best of 3 (transformers eager, greedy); "
          "same: leading tokens equal to transformers'")


if __name__ == "__main__":
    main()
