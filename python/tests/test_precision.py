"""Session precision through the daemon (host backend): a transformer block
and a CNN with BatchNormalization loaded with precision="fp16" and "bf16"
match onnxruntime's float32 within 1e-2 (the norm of the error over the
norm of the output) on fresh random inputs, with float32 in and out, and
differ from the fp32 session's results; `cudaepctl sessions` shows each
session's precision."""
import json
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import cudaep

BUILD = os.environ.get("CUDAEP_BUILD_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")

TOL = 1e-2


def _init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def transformer(path, rng, d=32, heads=4, ff=64):
    """A pre-norm block: LayerNormalization, attention with the heads split
    by a Reshape to Shape -> Gather -> Concat, a Where mask, Softmax, an Erf
    GELU feed-forward, two residual Adds; batch and seq are symbolic."""
    dh = d // heads

    def w(*shape):
        return (rng.uniform(-1, 1, shape) / np.sqrt(shape[0])).astype(np.float32)

    inits = [
        _init("g1", rng.uniform(0.8, 1.2, d).astype(np.float32)),
        _init("b1", rng.uniform(-0.1, 0.1, d).astype(np.float32)),
        _init("g2", rng.uniform(0.8, 1.2, d).astype(np.float32)),
        _init("b2", rng.uniform(-0.1, 0.1, d).astype(np.float32)),
        _init("wq", w(d, d)), _init("wk", w(d, d)), _init("wv", w(d, d)), _init("wo", w(d, d)),
        _init("w1", w(d, ff)), _init("c1", w(ff)), _init("w2", w(ff, d)), _init("c2", w(d)),
        _init("i0", np.array([0], np.int64)), _init("i1", np.array([1], np.int64)),
        _init("hd", np.array([heads, dh], np.int64)), _init("dd", np.array([d], np.int64)),
        _init("zero", np.array(0, np.int64)), _init("axes", np.array([1, 2], np.int64)),
        _init("scale", np.array(1 / np.sqrt(dh), np.float32)),
        _init("neg", np.array(-1e4, np.float32)), _init("half", np.array(0.5, np.float32)),
        _init("one", np.array(1.0, np.float32)), _init("sqrt2", np.array(np.sqrt(2), np.float32)),
    ]
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "g1", "b1"], ["ln1"], axis=-1),
        n("MatMul", ["ln1", "wq"], ["q"]), n("MatMul", ["ln1", "wk"], ["k"]),
        n("MatMul", ["ln1", "wv"], ["v"]),
        n("Shape", ["x"], ["sx"]), n("Gather", ["sx", "i0"], ["bsz"]),
        n("Gather", ["sx", "i1"], ["slen"]),
        n("Concat", ["bsz", "slen", "hd"], ["hshape"], axis=0),
        n("Concat", ["bsz", "slen", "dd"], ["dshape"], axis=0),
        n("Reshape", ["q", "hshape"], ["qh"]), n("Reshape", ["k", "hshape"], ["kh"]),
        n("Reshape", ["v", "hshape"], ["vh"]),
        n("Transpose", ["qh"], ["qt"], perm=[0, 2, 1, 3]),
        n("Transpose", ["kh"], ["kt"], perm=[0, 2, 3, 1]),
        n("Transpose", ["vh"], ["vt"], perm=[0, 2, 1, 3]),
        n("MatMul", ["qt", "kt"], ["s"]), n("Mul", ["s", "scale"], ["ss"]),
        n("Equal", ["mask", "zero"], ["pad"]), n("Unsqueeze", ["pad", "axes"], ["pad4"]),
        n("Where", ["pad4", "neg", "ss"], ["masked"]),
        n("Softmax", ["masked"], ["att"], axis=-1),
        n("MatMul", ["att", "vt"], ["ctx"]),
        n("Transpose", ["ctx"], ["ctxt"], perm=[0, 2, 1, 3]),
        n("Reshape", ["ctxt", "dshape"], ["ctx2"]),
        n("MatMul", ["ctx2", "wo"], ["attn"]), n("Add", ["x", "attn"], ["r1"]),
        n("LayerNormalization", ["r1", "g2", "b2"], ["ln2"], axis=-1, epsilon=1e-5),
        n("MatMul", ["ln2", "w1"], ["f1m"]), n("Add", ["f1m", "c1"], ["f1"]),
        n("Div", ["f1", "sqrt2"], ["f1s"]), n("Erf", ["f1s"], ["e"]),
        n("Add", ["e", "one"], ["e1"]), n("Mul", ["f1", "e1"], ["gx"]),
        n("Mul", ["gx", "half"], ["gelu"]),
        n("MatMul", ["gelu", "w2"], ["f2m"]), n("Add", ["f2m", "c2"], ["f2"]),
        n("Add", ["r1", "f2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", d]),
         helper.make_tensor_value_info("mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", d])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def cnn(path, rng):
    """Conv-BatchNormalization-Relu twice, GlobalAveragePool, Flatten, Gemm."""
    def bn(p, c):
        return [_init(p + "_s", rng.uniform(0.5, 1.5, c).astype(np.float32)),
                _init(p + "_b", rng.uniform(-0.5, 0.5, c).astype(np.float32)),
                _init(p + "_m", rng.uniform(-0.3, 0.3, c).astype(np.float32)),
                _init(p + "_v", rng.uniform(0.5, 1.5, c).astype(np.float32))]

    inits = [_init("w1", rng.uniform(-0.4, 0.4, (8, 3, 3, 3)).astype(np.float32)),
             _init("cb1", rng.uniform(-0.2, 0.2, 8).astype(np.float32)),
             _init("w2", rng.uniform(-0.15, 0.15, (16, 8, 3, 3)).astype(np.float32)),
             _init("fw", rng.uniform(-0.5, 0.5, (10, 16)).astype(np.float32)),
             _init("fc", rng.uniform(-0.5, 0.5, 10).astype(np.float32))]
    inits += bn("n1", 8) + bn("n2", 16)
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "cb1"], ["c1"], pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c1", "n1_s", "n1_b", "n1_m", "n1_v"], ["a1"]),
        n("Relu", ["a1"], ["r1"]),
        n("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        n("BatchNormalization", ["c2", "n2_s", "n2_b", "n2_m", "n2_v"], ["a2"]),
        n("Relu", ["a2"], ["r2"]),
        n("GlobalAveragePool", ["r2"], ["g"]), n("Flatten", ["g"], ["f"]),
        n("Gemm", ["f", "fw", "fc"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def rel_err(got, want):
    return float(np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want))


def block_inputs(rng, batch, seq):
    mask = rng.integers(0, 2, (batch, seq)).astype(np.int64)
    mask[:, 0] = 1
    return {"x": rng.uniform(-2, 2, (batch, seq, 32)).astype(np.float32), "mask": mask}


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_a_transformer_block_in_half_matches_onnxruntime(daemon, tmp_path, precision):
    rng = np.random.default_rng()
    path = transformer(str(tmp_path / "block.onnx"), rng)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    with cudaep.connect(daemon) as c, c.load(path, precision=precision) as s, \
            c.load(path) as s32:
        assert [(i.name, i.dtype) for i in s.inputs] == [("x", np.float32), ("mask", np.int64)]
        assert s.outputs[0].dtype == np.float32
        for batch, seq in ((2, 7), (1, 5), (2, 7)):
            feed = block_inputs(rng, batch, seq)
            got = s.run(feed)["y"]
            want = ref.run(None, feed)[0]
            assert got.dtype == np.float32 and got.shape == want.shape
            err = rel_err(got, want)
            print("%s transformer %dx%d: relative error %.3g" % (precision, batch, seq, err))
            assert err <= TOL
            assert not np.array_equal(got, s32.run(feed)["y"]), "it did not compute in half"


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_a_cnn_in_half_matches_onnxruntime(daemon, tmp_path, precision):
    rng = np.random.default_rng()
    path = cnn(str(tmp_path / "cnn.onnx"), rng)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    with cudaep.connect(daemon) as c, c.load(path, precision=precision) as s:
        for batch in (3, 1):
            x = rng.uniform(-2, 2, (batch, 3, 12, 12)).astype(np.float32)
            got = s.run({"x": x})["y"]
            err = rel_err(got, ref.run(None, {"x": x})[0])
            print("%s cnn batch %d: relative error %.3g" % (precision, batch, err))
            assert got.dtype == np.float32 and err <= TOL


def test_cudaepctl_shows_each_sessions_precision(daemon, tmp_path):
    path = cnn(str(tmp_path / "cnn.onnx"), np.random.default_rng(5))
    with cudaep.connect(daemon) as c:
        sessions = {p: c.load(path, name="cnn-" + p, precision=p)
                    for p in ("fp32", "tf32", "fp16", "bf16")}
        out = subprocess.run([os.path.join(BUILD, "bin", "cudaepctl"), "--socket", daemon,
                              "--json", "sessions"], check=True, capture_output=True,
                             text=True).stdout
        listed = {e["name"]: e["precision"] for e in json.loads(out)["sessions"]}
        assert listed == {"cnn-" + p: p for p in sessions}
        text = subprocess.run([os.path.join(BUILD, "bin", "cudaepctl"), "--socket", daemon,
                               "sessions"], check=True, capture_output=True, text=True).stdout
        assert "PRECISION" in text and " bf16 " in text
        for s in sessions.values():
            s.close()
