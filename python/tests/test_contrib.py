"""onnxruntime's contrib operators through the daemon (host backend),
against onnxruntime's CPU provider.

First each operator alone, in a model of its own: com.microsoft
SkipLayerNormalization and SkipSimplifiedLayerNormalization (every
optional input and output, a skip repeated over the batch),
SimplifiedLayerNormalization (ai.onnx, where onnxruntime defines it),
onnxruntime's LayerNormalization of opset 16, Gelu, QuickGelu, FastGelu,
BiasGelu, BiasAdd, and Attention with each mask form it takes. Each runs
in float32; in float16 and bfloat16 inside
the model (Casts around it) where onnxruntime has kernels of those types,
against onnxruntime in the same type, and otherwise against onnxruntime in
float32 on the same rounded inputs; and in fp16 and bf16 sessions of the
float32 model.

Then the end-to-end check: the BERT-like encoder of test_bert.py and a
pre-norm decoder block with RMS norms and tanh and quick GELUs, rewritten
by onnxruntime.transformers' own BertOnnxModel optimizer into Attention
(or, with that fusion off, not), SkipLayerNormalization, BiasGelu,
SimplifiedLayerNormalization, SkipSimplifiedLayerNormalization, FastGelu
and QuickGelu, give onnxruntime's answer for the rewritten file and the
original one.

onnxruntime's optimizer wants its symbolic shape inference, which needs
sympy, not part of the test environment; it is handed instead the shapes
onnx's own inference gives the original model (_Shapes), which is all its
fusions ask of it.
"""
import collections
import itertools

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import cudaep
import test_bert

MS = "com.microsoft"
F, F16, BF16 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16
NP = {F: np.float32, F16: np.float16, BF16: ml_dtypes.bfloat16}
# Two units in the last place of each type, relative.
ULP2 = {F: 1e-5, F16: 2e-3, BF16: 1.6e-2}


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "contrib", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                   helper.make_opsetid(MS, 1)])


def _vi(name, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def op_model(op, inputs, n_out, attrs=None, domain=MS, dtype=F, opset=17):
    """A model of op alone over float32 inputs [(name, shape)] (name ""
    for an omitted one) and n_out outputs; computed in dtype: float32
    inputs are cast to it and the outputs back (the statistics outputs
    are float32 already)."""
    nodes, ins = [], []
    for name, shape in inputs:
        if not name:
            ins.append("")
            continue
        if dtype == F:
            ins.append(name)
        else:
            nodes.append(helper.make_node("Cast", [name], [name + "_h"], to=dtype))
            ins.append(name + "_h")
    outs = ["out%d" % k for k in range(n_out)]
    inner = [o if dtype == F else o + "_h" for o in outs]
    nodes.append(helper.make_node(op, ins, inner, domain=domain, **(attrs or {})))
    for o, i in zip(outs, inner):
        if i != o:
            nodes.append(helper.make_node("Cast", [i], [o], to=F))
    return _model(nodes, [_vi(n, s) for n, s in inputs if n], [_vi(o, None) for o in outs],
                  opset=opset)


def _rounded(a, dtype):
    return a.astype(NP[dtype]).astype(np.float32)


def _feeds(rng, inputs, dtype, scale=3.0):
    return {n: _rounded(rng.uniform(-scale, scale, s).astype(np.float32), dtype)
            for n, s in inputs if n}


def _ort(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _assert_close(got, want, tol, what):
    assert got.shape == want.shape, what
    err = np.abs(got.astype(np.float64) - want)
    bound = tol * (1 + np.abs(want))
    print("%s: max abs error %.3g" % (what, err.max() if err.size else 0.0))
    assert np.all(err <= bound), "%s: worst %g at %s" % (what, (err - bound).max(),
                                                         np.unravel_index(np.argmax(err - bound), err.shape))


def rel_err(got, want):
    return float(np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want))


# (label, op, inputs, n_out, attrs, domain, opset, half kernels in onnxruntime's CPU provider)
B, S, H = 2, 5, 48
CASES = [
    ("skipln all", "SkipLayerNormalization",
     [("x", [B, S, H]), ("skip", [B, S, H]), ("gamma", [H]), ("beta", [H]), ("bias", [H])],
     4, {"epsilon": 1e-5}, MS, 17, True),
    ("skipln bare", "SkipLayerNormalization",
     [("x", [B, S, H]), ("skip", [B, S, H]), ("gamma", [H])], 1, None, MS, 17, True),
    ("skipln skip (1,S,H), bias only", "SkipLayerNormalization",
     [("x", [B, S, H]), ("skip", [1, S, H]), ("gamma", [H]), ("", None), ("bias", [H])],
     4, None, MS, 17, True),
    ("skipln skip (S,H)", "SkipLayerNormalization",
     [("x", [B, S, H]), ("skip", [S, H]), ("gamma", [H]), ("beta", [H])], 1, None, MS, 17,
     True),
    ("skipln tokens", "SkipLayerNormalization",
     [("x", [B * S, H]), ("skip", [B * S, H]), ("gamma", [H]), ("beta", [H])], 4,
     {"epsilon": 1e-6}, MS, 17, True),
    ("skip simplified", "SkipSimplifiedLayerNormalization",
     [("x", [B, S, H]), ("skip", [B, S, H]), ("gamma", [H]), ("bias", [H])], 4,
     {"epsilon": 1e-5}, MS, 17, True),
    ("skip simplified bare", "SkipSimplifiedLayerNormalization",
     [("x", [B * S, H]), ("skip", [B * S, H]), ("gamma", [H])], 1, None, MS, 17, True),
    ("simplified", "SimplifiedLayerNormalization", [("x", [B, S, H]), ("scale", [H])], 2,
     {"epsilon": 1e-5}, "", 17, True),
    ("simplified axis 1", "SimplifiedLayerNormalization", [("x", [B, S, H]), ("scale", [S, H])],
     2, {"axis": 1}, "", 13, True),
    ("layernorm 16", "LayerNormalization", [("x", [B, S, H]), ("scale", [H]), ("b", [H])], 3,
     {"epsilon": 1e-5}, "", 16, True),
    ("gelu", "Gelu", [("x", [B, S, H])], 1, None, MS, 17, False),
    ("quickgelu", "QuickGelu", [("x", [B, S, H])], 1, None, MS, 17, False),
    ("quickgelu alpha", "QuickGelu", [("x", [B, S, H])], 1, {"alpha": -1.25}, MS, 17, False),
    ("fastgelu", "FastGelu", [("x", [B, S, H])], 1, None, MS, 17, False),
    ("fastgelu bias", "FastGelu", [("x", [B, S, H]), ("bias", [H])], 1, None, MS, 17, False),
    ("biasgelu", "BiasGelu", [("x", [B, S, H]), ("bias", [H])], 1, None, MS, 17, False),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_operator_matches_onnxruntime(daemon, tmp_path, case):
    label, op, inputs, n_out, attrs, domain, opset, ort_half = case
    rng = np.random.default_rng()
    with cudaep.connect(daemon) as c:
        for dtype in (F, F16, BF16):
            model = op_model(op, inputs, n_out, attrs, domain, dtype, opset)
            path = str(tmp_path / ("m%d.onnx" % dtype))
            onnx.save(model, path)
            # onnxruntime computes the half types itself where it can, else
            # in float32 on the same rounded inputs.
            ref = _ort(model if dtype == F or ort_half else
                       op_model(op, inputs, n_out, attrs, domain, F, opset))
            feeds = _feeds(rng, inputs, dtype)
            with c.load(path) as s:
                got = s.run(feeds)
            want = ref.run(None, feeds)
            for k in range(n_out):
                # Statistics are float32 in every dtype: the half types'
                # inputs decide them, within float32's rounding.
                tol = ULP2[dtype] if k == 0 or op == "Gelu" or k == 3 else 1e-5
                if dtype != F and k == 0 and "layer" in op.lower():
                    tol *= 2  # the two normalize the unrounded sum, then round
                _assert_close(got["out%d" % k], want[k], tol,
                              "%s %s output %d" % (label, NP[dtype].__name__, k))


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_operator_in_half_sessions(daemon, tmp_path, case, precision):
    """The float32 model in an fp16 or bf16 session computes the
    operator in half and stays within 1e-2 of onnxruntime's float32."""
    label, op, inputs, n_out, attrs, domain, opset, _ = case
    rng = np.random.default_rng()
    model = op_model(op, inputs, n_out, attrs, domain, F, opset)
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    feeds = _feeds(rng, inputs, F)
    want = _ort(model).run(None, feeds)
    with cudaep.connect(daemon) as c, c.load(path, precision=precision) as s, \
            c.load(path) as s32:
        got, got32 = s.run(feeds), s32.run(feeds)
        err = rel_err(got["out0"], want[0])
        print("%s %s: relative error %.3g" % (label, precision, err))
        assert err <= 1e-2
        assert not np.array_equal(got["out0"], got32["out0"]), "it did not compute in half"


def test_bias_add_against_numpy(daemon, tmp_path):
    """BiasAdd has no kernel in onnxruntime's CPU provider: numpy it is."""
    rng = np.random.default_rng()
    inputs = [("x", [2, 16, 32]), ("bias", [32]), ("skip", [2, 16, 32])]
    with cudaep.connect(daemon) as c:
        for dtype in (F, F16):
            path = str(tmp_path / ("b%d.onnx" % dtype))
            onnx.save(op_model("BiasAdd", inputs, 1, None, MS, dtype), path)
            feeds = _feeds(rng, inputs, dtype)
            want = (feeds["x"] + feeds["bias"] + feeds["skip"]).astype(NP[dtype])
            with c.load(path) as s:
                got = s.run(feeds)["out0"]
            np.testing.assert_array_equal(got, want.astype(np.float32))


def test_refusals_name_the_operator(daemon, tmp_path):
    """An operator com.microsoft does not have here, a com.microsoft opset
    past 1 and a skip that does not fit are refused at load, BiasAdd in
    bfloat16 (no kernel of that type) at its first run, each with what was
    wrong."""
    bad_load = [
        (_model([helper.make_node("NoSuchFusion", ["x"], ["y"], domain=MS)],
                [_vi("x", [2, 4])], [_vi("y", [2, 4])]),
         "unknown op NoSuchFusion in domain com.microsoft"),
        (helper.make_model(helper.make_graph(
            [helper.make_node("Gelu", ["x"], ["y"], domain=MS)], "g", [_vi("x", [2, 4])],
            [_vi("y", [2, 4])]), opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid(MS, 2)]),
         "Gelu: opset 2 is not supported (supported 1-1)"),
        (op_model("SkipLayerNormalization", [("x", [2, 3, 8]), ("skip", [2, 1, 8]),
                                             ("gamma", [8])], 1),
         "skip of shape [2,1,8] must have input's shape [2,3,8]"),
    ]
    inputs = [("x", [2, 3, 8]), ("bias", [8]), ("skip", [2, 3, 8])]
    with cudaep.connect(daemon) as c:
        for k, (model, want) in enumerate(bad_load):
            path = str(tmp_path / ("bad%d.onnx" % k))
            onnx.save(model, path)
            with pytest.raises(cudaep.Error) as e:
                c.load(path).close()
            assert want in str(e.value), str(e.value)
        path = str(tmp_path / "bf16.onnx")
        onnx.save(op_model("BiasAdd", inputs, 1, dtype=BF16), path)
        with c.load(path) as s, pytest.raises(cudaep.Error) as e:
            s.run(_feeds(np.random.default_rng(), inputs, F))
        assert "BiasAdd: dtype bfloat16 is not supported on the host backend" in str(e.value)


def attention_model(b, s, k, heads, sizes, attrs, mask=None, attention_bias=False, bias=True,
                    dtype=F):
    """A model of com.microsoft Attention over input (b, s, k) and packed
    weights of the three hidden sizes, with an int32 mask_index of shape
    mask (None: none) and an attention_bias (1, heads, s, s); computed in
    dtype between Casts, as op_model does."""
    n = sum(sizes)
    floats = [("x", [b, s, k]), ("w", [k, n])] + ([("bias", [n])] if bias else [])
    if attention_bias:
        floats.append(("ab", [1, heads, s, s]))
    nodes, names = [], {}
    for name, _ in floats:
        names[name] = name if dtype == F else name + "_h"
        if dtype != F:
            nodes.append(helper.make_node("Cast", [name], [name + "_h"], to=dtype))
    ins = [names["x"], names["w"], names.get("bias", ""), "m" if mask else ""]
    if attention_bias:
        ins += ["", names["ab"]]
    out = "y" if dtype == F else "y_h"
    nodes.append(helper.make_node("Attention", ins, [out], domain=MS, num_heads=heads,
                                  qkv_hidden_sizes=list(sizes), **attrs))
    if dtype != F:
        nodes.append(helper.make_node("Cast", ["y_h"], ["y"], to=F))
    inputs = [_vi(nm, shape) for nm, shape in floats]
    if mask:
        inputs.append(_vi("m", mask, TensorProto.INT32))
    return _model(nodes, inputs, [_vi("y", None)]), floats


# (label, b, s, k, heads, (hq, hk, hv), attributes, mask_index shape, attention_bias, bias)
ATTENTION = [
    ("plain", 2, 6, 16, 2, (16, 16, 16), {}, None, False, True),
    ("lengths", 2, 6, 16, 2, (16, 16, 16), {}, "lengths", False, True),
    ("raw (B, S), causal, filter", 3, 5, 12, 3, (12, 12, 6),
     {"unidirectional": 1, "mask_filter_value": -5.0}, "raw2", False, True),
    ("raw (B, S, S), attention_bias, scale, no bias", 2, 7, 8, 4, (16, 16, 8),
     {"scale": 0.2}, "raw3", True, False),
]


def _attention_feeds(rng, floats, b, s, mask, dtype):
    feeds = _feeds(rng, floats, dtype, scale=1.0)
    if mask == "lengths":
        feeds["m"] = rng.integers(1, s + 1, b).astype(np.int32)
    elif mask:
        m = (rng.random((b, s) if mask == "raw2" else (b, s, s)) > 0.3).astype(np.int32)
        m[..., 0] = 1
        feeds["m"] = m
    return feeds


def _mask_shape(mask, b, s):
    return None if mask is None else [b] if mask == "lengths" else \
        [b, s] if mask == "raw2" else [b, s, s]


@pytest.mark.parametrize("case", ATTENTION, ids=[c[0] for c in ATTENTION])
def test_attention_matches_onnxruntime(daemon, tmp_path, case):
    """float32 against onnxruntime; float16 and bfloat16 inside the model
    and in half sessions against onnxruntime's float32 (its CPU provider
    has only that) on the same rounded inputs."""
    label, b, s, k, heads, sizes, attrs, mask, ab, bias = case
    rng = np.random.default_rng()
    shape = _mask_shape(mask, b, s)
    ref_model, floats = attention_model(b, s, k, heads, sizes, attrs, shape, ab, bias)
    ref = _ort(ref_model)
    with cudaep.connect(daemon) as c:
        for dtype in (F, F16, BF16):
            path = str(tmp_path / ("a%d.onnx" % dtype))
            onnx.save(attention_model(b, s, k, heads, sizes, attrs, shape, ab, bias, dtype)[0],
                      path)
            feeds = _attention_feeds(rng, floats, b, s, mask, dtype)
            want = ref.run(None, feeds)[0]
            with c.load(path) as sess:
                got = sess.run(feeds)["y"]
            if dtype == F:
                _assert_close(got, want, 1e-5, label)
            else:
                err = rel_err(got, want)
                print("%s %s: relative error %.3g" % (label, NP[dtype].__name__, err))
                assert err <= (1e-2 if dtype == F16 else 3e-2)
        path = str(tmp_path / "a.onnx")
        onnx.save(ref_model, path)
        feeds = _attention_feeds(rng, floats, b, s, mask, F)
        want = ref.run(None, feeds)[0]
        for precision in ("fp16", "bf16"):
            with c.load(path, precision=precision) as sess:
                err = rel_err(sess.run(feeds)["y"], want)
            print("%s %s session: relative error %.3g" % (label, precision, err))
            assert err <= (1e-2 if precision == "fp16" else 3e-2)


def test_attention_refusals(daemon, tmp_path):
    """Past state and mask_index's left-padding form are refused with what
    was wrong."""
    past = _model([helper.make_node("Attention", ["x", "w", "b", "", "past"], ["y"], domain=MS,
                                    num_heads=2)],
                  [_vi("x", [2, 3, 8]), _vi("w", [8, 24]), _vi("b", [24]),
                   _vi("past", [2, 2, 2, 0, 4])], [_vi("y", None)])
    left = _model([helper.make_node("Attention", ["x", "w", "b", "m"], ["y"], domain=MS,
                                    num_heads=2)],
                  [_vi("x", [2, 3, 8]), _vi("w", [8, 24]), _vi("b", [24]),
                   _vi("m", [4], TensorProto.INT32)], [_vi("y", None)])
    with cudaep.connect(daemon) as c:
        for k, (model, want) in enumerate(((past, "input past (past state) is not supported"),
                                           (left, "left-padding (2 * batch)"))):
            path = str(tmp_path / ("r%d.onnx" % k))
            onnx.save(model, path)
            with pytest.raises(cudaep.Error) as e:
                c.load(path).close()
            assert want in str(e.value), str(e.value)


# ------------------------------------------------------- end to end

class _Shapes:
    """What onnxruntime's fusions ask of its symbolic shape inference,
    answered from onnx's inference over the original model: the fusions
    keep the names of the values that survive them."""

    def __init__(self, model):
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
        g = inferred.graph
        self.known_vi_ = {v.name: v for v in itertools.chain(g.value_info, g.input, g.output)}

    def infer(self, *args, **kwargs):
        return True

    def get_edge_shape(self, name):
        vi = self.known_vi_.get(name)
        if vi is None or not vi.type.tensor_type.HasField("shape"):
            return None
        return [d.dim_param if d.HasField("dim_param") else
                d.dim_value if d.HasField("dim_value") else "?" + name
                for d in vi.type.tensor_type.shape.dim]

    def compare_shape(self, a, b):
        return self.get_edge_shape(a) == self.get_edge_shape(b)


def ort_optimize(path, out_path, heads, hidden, attention=False):
    """onnxruntime.transformers' BERT optimizer over the model at path,
    into out_path; returns the optimized model's operators counted by
    domain:op_type."""
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.onnx_model_bert import BertOnnxModel

    model = onnx.load(path)
    opt = BertOnnxModel(model, heads, hidden)
    shapes = _Shapes(model)
    opt.infer_runtime_shape = lambda dynamic_axis_mapping={}, update=False: shapes
    options = FusionOptions("bert")
    options.enable_attention = attention
    opt.optimize(options)
    opt.save_model_to_file(out_path)
    return collections.Counter((n.domain or "ai.onnx") + ":" + n.op_type
                               for n in opt.model.graph.node)


@pytest.mark.parametrize("attention", [True, False], ids=["Attention", "unfused attention"])
def test_bert_rewritten_by_onnxruntimes_optimizer(daemon, tmp_path, attention):
    rng = np.random.default_rng()
    path, opt_path = str(tmp_path / "bert.onnx"), str(tmp_path / "bert_opt.onnx")
    test_bert.bert(path, rng)
    ops = ort_optimize(path, opt_path, test_bert.HEADS, test_bert.HID, attention)
    print(dict(ops))
    # Every residual Add + LayerNormalization but the embeddings', the
    # feed-forwards' bias + Erf GELU, and (by default) each layer's
    # attention with its mask turned into lengths.
    assert ops["com.microsoft:SkipLayerNormalization"] == 2 * test_bert.LAYERS
    assert ops["com.microsoft:BiasGelu"] == test_bert.LAYERS
    assert ops["com.microsoft:Attention"] == (test_bert.LAYERS if attention else 0)
    ref, ref_orig = (ort.InferenceSession(p, providers=["CPUExecutionProvider"])
                     for p in (opt_path, path))
    with cudaep.connect(daemon) as c, c.load(opt_path) as s, \
            c.load(opt_path, precision="fp16") as s16:
        for batch in (2, 1, 3):
            ids = rng.integers(0, test_bert.VOCAB, (batch, test_bert.SEQ), dtype=np.int64)
            mask = np.ones((batch, test_bert.SEQ), np.int64)
            mask[1::2, test_bert.SEQ * 3 // 4:] = 0
            feed = {"input_ids": ids, "attention_mask": mask}
            got = s.run(feed)["last_hidden_state"]
            want = ref.run(None, feed)[0]
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(got, ref_orig.run(None, feed)[0], rtol=1e-4, atol=1e-4)
            err = rel_err(s16.run(feed)["last_hidden_state"], want)
            print("bert batch %d fp16: relative error %.3g" % (batch, err))
            assert err <= 1e-2


def decoder_block(path, rng, d=64, ff=128, layers=2):
    """A pre-norm decoder stack as Llama- and CLIP-style exports write it:
    RMS norms spelled out (Pow, ReduceMean, Add epsilon, Sqrt, Div, Mul
    by the weight), residual Adds, feed-forwards (MatMul + bias) with a
    tanh GELU spelled out, or with x * Sigmoid(1.702 x); symbolic batch
    and sequence."""
    N = helper.make_node
    inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
             (("two", 2.0), ("eps", 1e-6), ("half", 0.5), ("one", 1.0), ("k3", 0.044715),
              ("kt", np.sqrt(2 / np.pi)), ("qa", 1.702))]

    def w(name, *shape, scale=None):
        s = scale if scale is not None else 1 / np.sqrt(shape[0])
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * s)
                                             .astype(np.float32), name))
        return name

    def rms(nodes, x, name):
        inits.append(numpy_helper.from_array(
            (1 + 0.1 * rng.standard_normal(d)).astype(np.float32), name + ".w"))
        nodes += [N("Pow", [x, "two"], [name + "_sq"]),
                  N("ReduceMean", [name + "_sq"], [name + "_ms"], axes=[-1], keepdims=1),
                  N("Add", [name + "_ms", "eps"], [name + "_mse"]),
                  N("Sqrt", [name + "_mse"], [name + "_rms"]),
                  N("Div", [x, name + "_rms"], [name + "_n"]),
                  N("Mul", [name + ".w", name + "_n"], [name])]
        return name

    nodes, h = [], "x"
    for layer in range(layers):
        p = "l%d_" % layer
        n1 = rms(nodes, h, p + "n1")
        nodes += [N("MatMul", [n1, w(p + "w1", d, ff)], [p + "f1m"]),
                  N("Add", [p + "f1m", w(p + "c1", ff, scale=0.1)], [p + "f1"])]
        f = p + "f1"
        if layer % 2 == 0:
            # x * (0.5 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))))
            nodes += [N("Pow", [f, "three"], [p + "c"]), N("Mul", ["k3", p + "c"], [p + "c3"]),
                      N("Add", [f, p + "c3"], [p + "i"]), N("Mul", ["kt", p + "i"], [p + "ti"]),
                      N("Tanh", [p + "ti"], [p + "t"]), N("Add", ["one", p + "t"], [p + "t1"]),
                      N("Mul", [p + "t1", "half"], [p + "th"]), N("Mul", [f, p + "th"], [p + "g"])]
        else:
            nodes += [N("Mul", [f, "qa"], [p + "qs"]), N("Sigmoid", [p + "qs"], [p + "sg"]),
                      N("Mul", [f, p + "sg"], [p + "g"])]
        nodes += [N("MatMul", [p + "g", w(p + "w2", ff, d)], [p + "f2"]),
                  N("Add", [h, p + "f2"], [p + "res"])]
        h = p + "res"
    rms(nodes, h, "final")
    inits.append(numpy_helper.from_array(np.array(3.0, np.float32), "three"))
    graph = helper.make_graph(
        nodes, "decoder", [_vi("x", ["batch", "seq", d])], [_vi("final", ["batch", "seq", d])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def test_decoder_rewritten_by_onnxruntimes_optimizer(daemon, tmp_path):
    rng = np.random.default_rng()
    path, opt_path = str(tmp_path / "dec.onnx"), str(tmp_path / "dec_opt.onnx")
    decoder_block(path, rng)
    ops = ort_optimize(path, opt_path, 4, 64)
    print(dict(ops))
    for op in ("ai.onnx:SimplifiedLayerNormalization", "com.microsoft:SkipSimplifiedLayerNormalization",
               "com.microsoft:FastGelu", "com.microsoft:QuickGelu"):
        assert ops[op] >= 1, op
    ref, ref_orig = (ort.InferenceSession(p, providers=["CPUExecutionProvider"])
                     for p in (opt_path, path))
    with cudaep.connect(daemon) as c, c.load(opt_path) as s, \
            c.load(opt_path, precision="bf16") as s16:
        for batch, seq in ((2, 7), (1, 3)):
            feed = {"x": rng.standard_normal((batch, seq, 64)).astype(np.float32)}
            got = s.run(feed)["final"]
            want = ref.run(None, feed)[0]
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(got, ref_orig.run(None, feed)[0], rtol=1e-4, atol=1e-4)
            err = rel_err(s16.run(feed)["final"], want)
            print("decoder %dx%d bf16: relative error %.3g" % (batch, seq, err))
            assert err <= 2e-2
