"""The model zoo's entries (tests/gpu/zoo.py runs them): how each model is
built with random weights, its inputs, and its outputs' names.

An entry is a Spec. kind "torch" entries build a torch.nn.Module (random
weights come from cepgpu.randomize_, not from here); kind "onnx" entries
are the host self-test's small graphs made with onnx.helper, which need no
torch. Nothing here imports torch, torchvision, timm or transformers until
an entry is built, so the list can be read (--list, selection, the host's
tests) without them.
"""
import collections

import numpy as np

# Transformer sizes: small, so that both exporters are quick.
HIDDEN = 256
LAYERS = 2
HEADS = 4
FFN = 512
VOCAB = 2048
SEQ = 64


class Spec:
    """One zoo entry.

    name     the model's name in the table
    group    its group (--models takes groups as well as names)
    kind     "torch" or "onnx" (the self-test's graphs)
    make     () -> an eval-mode torch.nn.Module (torch), or
             (exporter) -> onnx.ModelProto (onnx)
    inputs   (batch, rng) -> OrderedDict {name: numpy array}, the order of
             make()'s forward arguments
    outputs  names given to the exported graph's outputs, in the order of
             the module's flattened outputs
    ort      None, or (model_type, num_heads, hidden) for
             onnxruntime.transformers.optimizer (the "+ortopt" exporters)
    test     the self-test's behaviours (export_fail, export_hang, export_timeout,
             kill_daemon, cell_timeout), empty for real models
    tune     None, or (model) -> None: adjusts the weights after the random
             ones (cepgpu.randomize_), where the architecture folds a
             scale into its initialisation
    """

    def __init__(self, name, group, kind, make, inputs, outputs, ort=None, test=None,
                 tune=None):
        self.name = name
        self.group = group
        self.kind = kind
        self.make = make
        self.inputs = inputs
        self.outputs = list(outputs)
        self.ort = ort
        self.test = dict(test or {})
        self.tune = tune

    @property
    def seed(self):
        """A seed fixed by the name, the same in every process (Python's
        hash() is salted per process)."""
        return sum((i + 1) * ord(c) for i, c in enumerate(self.name)) % (2 ** 31)


# ------------------------------------------------------------- inputs


def image(size):
    def inputs(batch, rng):
        return collections.OrderedDict(
            x=rng.standard_normal((batch, 3, size, size)).astype(np.float32))
    return inputs


def _ids_mask(batch, rng):
    b = max(2, batch)  # a second row to carry padding
    ids = rng.integers(0, VOCAB, (b, SEQ), dtype=np.int64)
    mask = np.ones((b, SEQ), dtype=np.int64)
    # Right padding on every other row: every query still sees a key, so
    # causal models stay finite.
    mask[1::2, SEQ * 3 // 4:] = 0
    return ids, mask


def text(batch, rng):
    ids, mask = _ids_mask(batch, rng)
    return collections.OrderedDict(input_ids=ids, attention_mask=mask)


def seq2seq(batch, rng):
    ids, mask = _ids_mask(batch, rng)
    dec = rng.integers(0, VOCAB, (ids.shape[0], SEQ // 4), dtype=np.int64)
    return collections.OrderedDict(input_ids=ids, attention_mask=mask, decoder_input_ids=dec)


WHISPER_POSITIONS = 100  # encoder frames after the stride-2 conv: input 200


def audio(batch, rng):
    return collections.OrderedDict(
        input_features=rng.standard_normal(
            (batch, 80, 2 * WHISPER_POSITIONS)).astype(np.float32))


# ------------------------------------------------------------- torch models


def _wrap(fn):
    """A Module whose forward is fn(inner, *args); built lazily so this
    file imports without torch."""
    import torch

    class Wrap(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            return fn(self.inner, *args)

    return Wrap


def tv(name, **kw):
    def make():
        import torchvision
        return torchvision.models.get_model(name, weights=None, **kw).eval()
    return make


def tv_seg(name):
    def make():
        import torchvision
        m = torchvision.models.get_model(name, weights=None, weights_backbone=None,
                                         num_classes=21, aux_loss=False)
        return _wrap(lambda inner, x: inner(x)["out"])(m).eval()
    return make


def tv_det(name):
    def make():
        import torchvision
        m = torchvision.models.get_model(name, weights=None, weights_backbone=None)

        def fwd(inner, x):
            out = []
            for d in inner(list(x)):
                out += [d["boxes"], d["scores"], d["labels"]]
            return tuple(out)
        return _wrap(fwd)(m).eval()
    return make


def timm_model(name):
    def make():
        import timm
        return timm.create_model(name, pretrained=False).eval()
    return make


def _hf(cls_name, cfg_name, cfg_kw, call):
    def make():
        import transformers
        from cepgpu import hf_eager
        cfg = hf_eager(getattr(transformers, cfg_name)(**cfg_kw))
        if hasattr(cfg, "use_cache"):
            cfg.use_cache = False
        m = getattr(transformers, cls_name)(cfg)
        if hasattr(m, "set_attn_implementation"):
            try:
                m.set_attn_implementation("eager")
            except Exception:  # older or newer transformers: the config said it
                pass
        return _wrap(call)(m).eval()
    return make


def _encoder(inner, ids, mask):
    return inner(input_ids=ids, attention_mask=mask).last_hidden_state


def _causal(inner, ids, mask):
    return inner(input_ids=ids, attention_mask=mask, use_cache=False).logits


def _t5(inner, ids, mask, dec):
    return inner(input_ids=ids, attention_mask=mask, decoder_input_ids=dec,
                 use_cache=False).logits


def _t5_tune(model):
    """T5 does not divide its attention logits by sqrt(d_kv): its
    initialisation folds that into the query weights, which unit-deviation
    random ones undo (logits of deviation 8, bf16 then 0.09 off even on
    exact kernels)."""
    import torch
    with torch.no_grad():
        for mod in model.modules():
            if type(mod).__name__ == "T5Attention":
                mod.q.weight.mul_(mod.key_value_proj_dim ** -0.5)


def _whisper_make():
    import transformers
    from cepgpu import hf_eager
    cfg = hf_eager(transformers.WhisperConfig(
        vocab_size=VOCAB, num_mel_bins=80, d_model=HIDDEN, encoder_layers=LAYERS,
        encoder_attention_heads=HEADS, decoder_layers=LAYERS, decoder_attention_heads=HEADS,
        encoder_ffn_dim=FFN, decoder_ffn_dim=FFN, max_source_positions=WHISPER_POSITIONS,
        max_target_positions=SEQ, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        decoder_start_token_id=3))
    enc = transformers.WhisperModel(cfg).get_encoder()
    return _wrap(lambda inner, x: inner(input_features=x).last_hidden_state)(enc).eval()


_BERTISH = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=512)
_DECODER = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN,
                num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=2,
                max_position_embeddings=4 * SEQ, tie_word_embeddings=False)

_LOGITS = ["logits"]
_HIDDEN = ["last_hidden_state"]
TV_CNNS = ("resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
           "convnext_tiny", "shufflenet_v2_x1_0", "squeezenet1_1", "densenet121",
           "regnet_y_400mf", "mnasnet1_0")

SPECS = [Spec(n, "tv", "torch", tv(n), image(224), _LOGITS) for n in TV_CNNS]
SPECS += [
    Spec("vit_b_16", "tv", "torch", tv("vit_b_16"), image(224), _LOGITS),
    Spec("swin_t", "tv", "torch", tv("swin_t"), image(224), _LOGITS),
    Spec("deeplabv3_mobilenet_v3_large", "detseg", "torch",
         tv_seg("deeplabv3_mobilenet_v3_large"), image(224), ["out"]),
    Spec("ssdlite320_mobilenet_v3_large", "detseg", "torch",
         tv_det("ssdlite320_mobilenet_v3_large"), image(320), ["boxes", "scores", "labels"]),
    Spec("deit_small_patch16_224", "timm", "torch", timm_model("deit_small_patch16_224"),
         image(224), _LOGITS),
    Spec("convnext_atto", "timm", "torch", timm_model("convnext_atto"), image(224), _LOGITS),
    Spec("resnet18d", "timm", "torch", timm_model("resnet18d"), image(224), _LOGITS),
    Spec("bert", "hf", "torch", _hf("BertModel", "BertConfig", _BERTISH, _encoder), text,
         _HIDDEN, ort=("bert", HEADS, HIDDEN)),
    Spec("roberta", "hf", "torch", _hf("RobertaModel", "RobertaConfig", _BERTISH, _encoder),
         text, _HIDDEN),
    Spec("distilbert", "hf", "torch",
         _hf("DistilBertModel", "DistilBertConfig",
             dict(vocab_size=VOCAB, dim=HIDDEN, n_layers=LAYERS, n_heads=HEADS, hidden_dim=FFN),
             _encoder), text, _HIDDEN),
    Spec("gpt2", "hf", "torch",
         _hf("GPT2LMHeadModel", "GPT2Config",
             dict(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS,
                  n_positions=4 * SEQ, bos_token_id=1, eos_token_id=2), _causal), text,
         _LOGITS, ort=("gpt2", HEADS, HIDDEN)),
    Spec("llama", "hf", "torch", _hf("LlamaForCausalLM", "LlamaConfig", _DECODER, _causal),
         text, _LOGITS),
    Spec("qwen2", "hf", "torch", _hf("Qwen2ForCausalLM", "Qwen2Config", _DECODER, _causal),
         text, _LOGITS),
    Spec("t5", "hf", "torch",
         _hf("T5ForConditionalGeneration", "T5Config",
             dict(vocab_size=VOCAB, d_model=HIDDEN, d_kv=HIDDEN // HEADS, d_ff=FFN,
                  num_layers=LAYERS, num_decoder_layers=LAYERS, num_heads=HEADS,
                  decoder_start_token_id=0, pad_token_id=0), _t5), seq2seq, _LOGITS,
         tune=_t5_tune),
    Spec("whisper_encoder", "hf", "torch", _whisper_make, audio, _HIDDEN),
]

# ------------------------------------------------------------- the self-test's graphs
# Small graphs through the same machinery on the host backend: each has the
# result the self-test expects per precision ("pass", "FAIL", "not loaded",
# "export failed"), and a behaviour the machinery must report rather than
# crash on.


def _graph(nodes, inputs, outputs, inits=(), opset=17, domains=()):
    import onnx
    from onnx import helper
    g = helper.make_graph(nodes, "selftest", inputs, outputs, list(inits))
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    m = helper.make_model(g, opset_imports=ops, producer_name="zoo-selftest")
    m.ir_version = min(m.ir_version, 9)
    onnx.checker.check_model(m) if not domains else None
    return m


def _st(fn):
    """An onnx-kind make: fn(helper, TensorProto, rng) -> ModelProto. The
    "dynamo" exporter gives the same graph at opset 18."""
    def make(exporter):
        from onnx import TensorProto, helper
        rng = np.random.default_rng(7)
        m = fn(helper, TensorProto, rng)
        if exporter.startswith("dynamo"):
            for o in m.opset_import:
                if o.domain == "":
                    o.version = 18
        return m
    return make


def _w(name, arr):
    from onnx import numpy_helper
    return numpy_helper.from_array(arr.astype(np.float32), name)


def _mlp(h, T, rng):
    x = h.make_tensor_value_info("x", T.FLOAT, [2, 16])
    y = h.make_tensor_value_info("y", T.FLOAT, [2, 4])
    inits = [_w("w1", rng.standard_normal((16, 32)) / 4), _w("b1", rng.standard_normal(32) / 10),
             _w("w2", rng.standard_normal((32, 4)) / 6)]
    nodes = [h.make_node("MatMul", ["x", "w1"], ["m1"], name="mm1"),
             h.make_node("Add", ["m1", "b1"], ["a1"], name="add1"),
             h.make_node("Relu", ["a1"], ["r1"], name="relu1"),
             h.make_node("MatMul", ["r1", "w2"], ["y"], name="mm2")]
    return _graph(nodes, [x], [y], inits)


def _conv(h, T, rng):
    x = h.make_tensor_value_info("x", T.FLOAT, [1, 3, 12, 12])
    y = h.make_tensor_value_info("y", T.FLOAT, [1, 5])
    inits = [_w("cw", rng.standard_normal((8, 3, 3, 3)) / 5),
             _w("sc", 1 + rng.standard_normal(8) / 10), _w("bi", rng.standard_normal(8) / 10),
             _w("mu", rng.standard_normal(8) / 10), _w("va", rng.uniform(0.5, 2, 8)),
             _w("gw", rng.standard_normal((5, 8)) / 3)]
    nodes = [h.make_node("Conv", ["x", "cw"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             h.make_node("BatchNormalization", ["c", "sc", "bi", "mu", "va"], ["bn"], name="bn"),
             h.make_node("Relu", ["bn"], ["r"], name="relu"),
             h.make_node("GlobalAveragePool", ["r"], ["p"], name="gap"),
             h.make_node("Flatten", ["p"], ["f"], name="flat"),
             h.make_node("Gemm", ["f", "gw"], ["y"], name="fc", transB=1)]
    return _graph(nodes, [x], [y], inits)


def _cancel(h, T, rng):
    # (x + 1000) - 1000: exact in float32 to about 1e-4, off by fp16's
    # half-ulp at 1000 (0.25) and bf16's (4): a real precision failure.
    x = h.make_tensor_value_info("x", T.FLOAT, [4, 8])
    y = h.make_tensor_value_info("y", T.FLOAT, [4, 8])
    inits = [_w("k", np.array([1000.0]))]
    nodes = [h.make_node("Add", ["x", "k"], ["a"], name="add"),
             h.make_node("Sub", ["a", "k"], ["y"], name="sub")]
    return _graph(nodes, [x], [y], inits)


def _nan(h, T, rng):
    x = h.make_tensor_value_info("x", T.FLOAT, [4, 8])
    y = h.make_tensor_value_info("y", T.FLOAT, [4, 8])
    return _graph([h.make_node("Sqrt", ["x"], ["y"], name="sqrt")], [x], [y])


def _badop(h, T, rng):
    x = h.make_tensor_value_info("x", T.FLOAT, [4, 8])
    y = h.make_tensor_value_info("y", T.FLOAT, [4, 8])
    return _graph([h.make_node("Frobnicate", ["x"], ["y"], name="frob", domain="com.example")],
                  [x], [y], domains=["com.example"])


def _multi(h, T, rng):
    x = h.make_tensor_value_info("x", T.FLOAT, [3, 10])
    y = h.make_tensor_value_info("y", T.FLOAT, [3, 10])
    i = h.make_tensor_value_info("i", T.INT64, [3])
    nodes = [h.make_node("Softmax", ["x"], ["y"], name="softmax", axis=1),
             h.make_node("ArgMax", ["x"], ["i"], name="argmax", axis=1, keepdims=0)]
    return _graph(nodes, [x], [y, i])


def _tokens(h, T, rng):
    # An int64 input next to a float one: ids Gather rows of a table.
    ids = h.make_tensor_value_info("input_ids", T.INT64, [2, 6])
    s = h.make_tensor_value_info("scale", T.FLOAT, [1])
    y = h.make_tensor_value_info("y", T.FLOAT, [2, 6, 8])
    inits = [_w("table", rng.standard_normal((50, 8)))]
    nodes = [h.make_node("Gather", ["table", "input_ids"], ["g"], name="gather"),
             h.make_node("Mul", ["g", "scale"], ["y"], name="mul")]
    return _graph(nodes, [ids, s], [y], inits)


def _slow(h, T, rng):
    # Eight 512x512 products: most of a second per run on the host's
    # reference kernels, so a short cell timeout cuts it.
    x = h.make_tensor_value_info("x", T.FLOAT, [512, 512])
    y = h.make_tensor_value_info("y", T.FLOAT, [512, 512])
    inits = [_w("w", rng.standard_normal((512, 512)) / 23)]
    nodes = [h.make_node("MatMul", ["x" if i == 0 else "m%d" % (i - 1), "w"],
                         ["y" if i == 7 else "m%d" % i], name="mm%d" % i) for i in range(8)]
    return _graph(nodes, [x], [y], inits)


def _feeds(**shapes):
    def inputs(batch, rng):
        out = collections.OrderedDict()
        for name, (shape, dt) in shapes.items():
            if dt == "int":
                out[name] = rng.integers(0, 50, shape, dtype=np.int64)
            else:
                out[name] = rng.standard_normal(shape).astype(np.float32)
        return out
    return inputs


_X48 = _feeds(x=((4, 8), "f"))
SELFTEST = [
    Spec("st_mlp", "selftest", "onnx", _st(_mlp), _feeds(x=((2, 16), "f")), ["y"],
         ort=("bert", 2, 16)),
    Spec("st_conv", "selftest", "onnx", _st(_conv), _feeds(x=((1, 3, 12, 12), "f")), ["y"]),
    Spec("st_multi", "selftest", "onnx", _st(_multi), _feeds(x=((3, 10), "f")), ["y", "i"]),
    Spec("st_tokens", "selftest", "onnx", _st(_tokens),
         _feeds(input_ids=((2, 6), "int"), scale=((1,), "f")), ["y"]),
    Spec("st_cancel", "selftest", "onnx", _st(_cancel), _X48, ["y"]),
    Spec("st_nan", "selftest", "onnx", _st(_nan), _X48, ["y"]),
    Spec("st_badop", "selftest", "onnx", _st(_badop), _X48, ["y"]),
    Spec("st_exportfail", "selftest", "onnx", _st(_mlp), _feeds(x=((2, 16), "f")), ["y"],
         test={"export_fail": "dynamo"}),
    Spec("st_exporthang", "selftest", "onnx", _st(_mlp), _feeds(x=((2, 16), "f")), ["y"],
         test={"export_hang": True, "export_timeout": 3}),
    Spec("st_crash", "selftest", "onnx", _st(_mlp), _feeds(x=((2, 16), "f")), ["y"],
         test={"kill_daemon": "fp16"}),
    Spec("st_timeout", "selftest", "onnx", _st(_slow), _feeds(x=((512, 512), "f")), ["y"],
         test={"cell_timeout": 0.3}),
]

# What the self-test expects: {model: {precision: result prefix}}, "*" for
# every precision; exporters as listed in EXPECT_EXPORTERS (default both).
EXPECT = {
    "st_mlp": {"*": "pass"},
    "st_conv": {"*": "pass"},
    "st_multi": {"*": "pass"},
    "st_tokens": {"*": "pass"},
    "st_cancel": {"fp32": "pass", "fp16": "FAIL err", "bf16": "FAIL err"},
    "st_nan": {"*": "FAIL NaN"},
    "st_badop": {"*": "not loaded: node 0 'frob'"},
    "st_exportfail": {"*": "pass"},
    "st_exporthang": {"*": "export failed: timed out"},
    "st_crash": {"fp32": "pass", "fp16": "FAIL daemon crashed", "bf16": "pass"},
    "st_timeout": {"*": "FAIL timeout"},
}
EXPECT_EXPORT_FAIL = {("st_exportfail", "dynamo"): "export failed: RuntimeError: "}

GROUPS = collections.OrderedDict()
for _s in SPECS:
    GROUPS.setdefault(_s.group, []).append(_s.name)
GROUPS["cnn"] = [s.name for s in SPECS if s.group in ("tv", "timm") and
                 not s.name.startswith(("vit", "swin", "deit"))]
GROUPS["transformer"] = [s.name for s in SPECS if s.group == "hf" or
                         s.name.startswith(("vit", "swin", "deit"))]
# The fp16 failures seen on the CUDA backend (MobileNetV2 and V3-Small at
# every batch, EfficientNet-B0 at 32).
GROUPS["fp16bugs"] = ["mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0"]
GROUPS["all"] = [s.name for s in SPECS]
GROUPS["selftest"] = [s.name for s in SELFTEST]

BY_NAME = {s.name: s for s in SPECS + SELFTEST}
