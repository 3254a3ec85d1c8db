#!/usr/bin/env python3
"""tools/export_decoders.py — exports decoder-only language models with
random weights, shaped as real ones, for benchmarking and testing cudaep's
generation (Session.generate(), cudaep-run --generate) on real-sized graphs
without downloading any weights.

Each model is made from a transformers configuration (GPT-2 small, a
Llama-3.2-1B-shaped Llama, a Qwen2.5-0.5B-shaped Qwen2 with grouped-query
attention), given seeded random weights (AutoModelForCausalLM.from_config)
and saved to a scratch directory, then exported in up to two formats:

  hf     Hugging Face's, through optimum.exporters.onnx.main_export with the
         task text-generation-with-past: model.onnx with input_ids,
         attention_mask, position_ids and past_key_values.N.key/.value in,
         logits and present.N.key/.value out, attention written op by op.
  genai  onnxruntime-genai's, through its model builder
         (python -m onnxruntime_genai.models.builder): GroupQueryAttention
         and, at int4, MatMulNBits weights; with genai_config.json. Only
         when onnxruntime_genai is importable, and only for the
         architectures the builder knows (Llama, Qwen2; not GPT-2).

It needs torch, transformers and optimum (and onnxruntime_genai for the
genai format), which cudaep's own environment does not have: install them
in a virtual environment of their own. --help works without them. It was
written from the libraries' documentation and has not been run in the
cudaep tree (no torch there); check the first export's graph before
relying on it.

    tools/export_decoders.py --out models/ --models qwen2.5-0.5b --dtype fp16
    tools/export_decoders.py --out models/ --layers 2 --formats hf

Output: DIR/<model>-<format>-<dtype>/ per export, and DIR/manifest.json
listing each with its configuration and inputs.
"""
import argparse
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile

# The configurations, as transformers' config classes take them. Sizes are
# those of the models named; the weights are random.
MODELS = {
    "gpt2": ("GPT2Config", dict(
        vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12,
        activation_function="gelu_new", layer_norm_epsilon=1e-5,
        bos_token_id=50256, eos_token_id=50256)),
    "llama3.2-1b": ("LlamaConfig", dict(
        vocab_size=128256, hidden_size=2048, intermediate_size=8192,
        num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8, head_dim=64,
        max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
        rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
        hidden_act="silu", tie_word_embeddings=True, bos_token_id=128000,
        eos_token_id=128001)),
    "qwen2.5-0.5b": ("Qwen2Config", dict(
        vocab_size=151936, hidden_size=896, intermediate_size=4864,
        num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
        max_position_embeddings=32768, rms_norm_eps=1e-6, rope_theta=1000000.0,
        hidden_act="silu", tie_word_embeddings=True, use_sliding_window=False,
        bos_token_id=151643, eos_token_id=151643)),
}
# The configuration key of the layer count, per config class.
LAYERS_KEY = {"GPT2Config": "n_layer", "LlamaConfig": "num_hidden_layers",
              "Qwen2Config": "num_hidden_layers"}
GENAI_ARCHS = {"LlamaConfig", "Qwen2Config"}
HF_DTYPES = ("fp32", "fp16")
GENAI_DTYPES = ("fp32", "fp16", "int4")


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Export decoder-only models with random weights, shaped as GPT-2 small, "
                    "Llama-3.2-1B and Qwen2.5-0.5B, as ONNX in Hugging Face's format "
                    "(optimum) and onnxruntime-genai's (its model builder). Needs torch, "
                    "transformers and optimum; onnxruntime_genai for the genai format.",
        epilog="Example: %(prog)s --out models --models qwen2.5-0.5b --dtype fp16,int4")
    p.add_argument("--out", required=True, metavar="DIR", help="directory for the exports")
    p.add_argument("--models", default=",".join(MODELS), metavar="LIST",
                   help="comma-separated, of: %s (default: all)" % ", ".join(MODELS))
    p.add_argument("--dtype", default="fp32", metavar="LIST",
                   help="comma-separated, of: fp32, fp16 (hf and genai), int4 (genai only: "
                        "MatMulNBits); default fp32")
    p.add_argument("--formats", default="hf,genai", metavar="LIST",
                   help="comma-separated, of: hf, genai (default both; genai is skipped "
                        "when onnxruntime_genai is not importable)")
    p.add_argument("--layers", type=int, metavar="N",
                   help="override the number of layers (smaller exports, same shapes)")
    p.add_argument("--opset", type=int, default=17, help="ONNX opset of the hf export "
                   "(default 17)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    p.add_argument("--device", default=None,
                   help="torch device for the export (default: cuda when available; "
                        "optimum exports fp16 on cuda only)")
    p.add_argument("--keep-torch", action="store_true",
                   help="keep the saved random-weight PyTorch model next to the exports")
    a = p.parse_args(argv)

    def split(value, allowed, what):
        items = [v.strip() for v in value.split(",") if v.strip()]
        bad = [v for v in items if v not in allowed]
        if bad or not items:
            p.error("%s: %s not among %s" % (what, ", ".join(bad) or "nothing given",
                                              ", ".join(allowed)))
        return items

    a.models = split(a.models, MODELS, "--models")
    a.dtype = split(a.dtype, GENAI_DTYPES, "--dtype")
    a.formats = split(a.formats, ("hf", "genai"), "--formats")
    if a.layers is not None and a.layers < 1:
        p.error("--layers must be at least 1")
    return a


def need(module, why):
    if importlib.util.find_spec(module) is None:
        sys.exit("export_decoders: %s needs the Python package %r (pip install %s)"
                 % (why, module, {"optimum": "optimum[exporters]"}.get(module, module)))


def make_random_model(name, layers, seed, where):
    """Saves a model of name's configuration with seeded random weights to
    where (save_pretrained: config.json and safetensors); returns its
    config class name and the configuration used."""
    import torch
    import transformers
    cls_name, cfg = MODELS[name]
    cfg = dict(cfg)
    if layers is not None:
        cfg[LAYERS_KEY[cls_name]] = layers
    config = getattr(transformers, cls_name)(**cfg)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config)
    model.eval()
    model.save_pretrained(where)
    # A generation config for the exporters that read one; no tokenizer:
    # cudaep takes token ids, and the exporters go on without one.
    model.generation_config.save_pretrained(where)
    return cls_name, cfg


def export_hf(src, out, dtype, opset, device):
    """optimum's export of the model at src to out, with its past inputs."""
    from optimum.exporters.onnx import main_export
    kw = dict(model_name_or_path=src, output=out, task="text-generation-with-past",
              opset=opset, device=device)
    params = inspect.signature(main_export).parameters
    if dtype == "fp16":
        if device != "cuda":
            raise SystemExit("export_decoders: optimum exports fp16 on a CUDA device only "
                             "(--device cuda)")
        if "dtype" in params:   # optimum >= 1.17 (fp16 deprecated)
            kw["dtype"] = "fp16"
        else:
            kw["fp16"] = True
        kw["do_validation"] = False  # random fp16 weights miss fp32's tolerance
    if "legacy" in params:
        kw["legacy"] = False  # one model.onnx with past inputs, not decoder/with-past pairs
    main_export(**kw)


def export_genai(src, out, dtype, cache):
    """onnxruntime-genai's model builder on the model at src."""
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", src, "-o", out,
           "-p", dtype, "-e", "cuda", "-c", cache]
    print("+ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def onnx_io(path):
    """The inputs and outputs of the .onnx files under path, by name, for
    the manifest (the graph only: external data is not read)."""
    try:
        import onnx
    except ImportError:
        return None
    files = {}
    for f in sorted(os.listdir(path)):
        if f.endswith(".onnx"):
            m = onnx.load(os.path.join(path, f), load_external_data=False)
            files[f] = {"inputs": [i.name for i in m.graph.input],
                        "outputs": [o.name for o in m.graph.output],
                        "ops": sorted({n.op_type for n in m.graph.node})}
    return files


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    need("torch", "making the random-weight models")
    need("transformers", "making the random-weight models")
    if "hf" in a.formats:
        need("optimum", "the hf format")
    genai = "genai" in a.formats and importlib.util.find_spec("onnxruntime_genai") is not None
    if "genai" in a.formats and not genai:
        print("export_decoders: onnxruntime_genai is not importable: no genai exports",
              file=sys.stderr)
    import torch
    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    os.makedirs(a.out, exist_ok=True)
    manifest = []
    scratch = tempfile.mkdtemp(prefix="export_decoders-")
    try:
        for name in a.models:
            src = os.path.join(scratch, name)
            cls_name, cfg = make_random_model(name, a.layers, a.seed, src)
            for dtype in a.dtype:
                jobs = []
                if "hf" in a.formats and dtype in HF_DTYPES:
                    jobs.append("hf")
                if genai and cls_name in GENAI_ARCHS:
                    jobs.append("genai")
                for fmt in jobs:
                    out = os.path.join(a.out, "%s-%s-%s" % (name, fmt, dtype))
                    print("export_decoders: %s" % out, flush=True)
                    if fmt == "hf":
                        export_hf(src, out, dtype, a.opset, device)
                    else:
                        export_genai(src, out, dtype, os.path.join(scratch, "cache"))
                    manifest.append({"model": name, "format": fmt, "dtype": dtype,
                                     "path": out, "config": cls_name, "params": cfg,
                                     "seed": a.seed, "files": onnx_io(out)})
            if a.keep_torch:
                shutil.copytree(src, os.path.join(a.out, "%s-torch" % name),
                                dirs_exist_ok=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("export_decoders: %d exports, listed in %s"
          % (len(manifest), os.path.join(a.out, "manifest.json")))


if __name__ == "__main__":
    main()
