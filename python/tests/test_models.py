"""Real models through the daemon on the host backend, compared with
onnxruntime (CPU) on fresh random inputs."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import cudaep


def mlp(path, rng):
    """MatMul-Add-Relu-MatMul-Add-Softmax with a symbolic batch."""
    w1 = rng.standard_normal((16, 32)).astype(np.float32)
    b1 = rng.standard_normal(32).astype(np.float32)
    w2 = rng.standard_normal((32, 10)).astype(np.float32)
    b2 = rng.standard_normal(10).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"]),
        helper.make_node("Add", ["h1", "b1"], ["h2"]),
        helper.make_node("Relu", ["h2"], ["h3"]),
        helper.make_node("MatMul", ["h3", "w2"], ["h4"]),
        helper.make_node("Add", ["h4", "b2"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(b2, "b2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def test_mlp_matches_onnxruntime(daemon, tmp_path):
    rng = np.random.default_rng()
    path = mlp(str(tmp_path / "mlp.onnx"), rng)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    with cudaep.connect(daemon) as c, c.load(path, name="mlp") as s:
        assert [i.name for i in s.inputs] == ["x"]
        assert s.inputs[0].shape == ("batch", 16)
        assert [o.name for o in s.outputs] == ["probs", "logits"]
        for batch in (1, 7, 3, 7):  # a new shape, then a cached plan again
            x = rng.standard_normal((batch, 16)).astype(np.float32)
            got = s.run({"x": x})
            want = dict(zip(["probs", "logits"], ref.run(None, {"x": x})))
            for name in want:
                assert got[name].shape == want[name].shape
                np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5)


def test_wrong_input_is_named(daemon, tmp_path):
    path = mlp(str(tmp_path / "mlp.onnx"), np.random.default_rng(1))
    with cudaep.connect(daemon) as c, c.load(path) as s:
        with pytest.raises(cudaep.Error) as e:
            s.run({"x": np.zeros((2, 15), np.float32)})
        assert e.value.name == "ESHAPE"
        assert "'x'" in e.value.detail and "dimension 1" in e.value.detail
        with pytest.raises(cudaep.Error) as e:
            s.run({"x": np.zeros((2, 16), np.int64)})
        assert e.value.name == "EDTYPE"
        # The session still runs afterwards.
        assert s.run({"x": np.zeros((2, 16), np.float32)})["probs"].shape == (2, 10)


def test_two_clients_share_nothing_but_the_daemon(daemon, tmp_path):
    path = mlp(str(tmp_path / "mlp.onnx"), np.random.default_rng(2))
    x = np.ones((4, 16), np.float32)
    with cudaep.connect(daemon, "a") as a, cudaep.connect(daemon, "b") as b:
        sa, sb = a.load(path), b.load(path)
        np.testing.assert_array_equal(sa.run({"x": x})["probs"], sb.run({"x": x})["probs"])
        sa.close()
        assert sb.run({"x": x})["probs"].shape == (4, 10)
        sb.close()


def cnn(path, rng):
    """Conv-BatchNormalization-Relu-MaxPool twice, then Flatten-Gemm, with
    a symbolic batch."""
    def conv_bn(name, cin, cout, x):
        w = (rng.standard_normal((cout, cin, 3, 3)) / np.sqrt(cin * 9)).astype(np.float32)
        b = rng.standard_normal(cout).astype(np.float32) * 0.1
        scale = rng.uniform(0.5, 1.5, cout).astype(np.float32)
        bias = rng.standard_normal(cout).astype(np.float32) * 0.1
        mean = rng.standard_normal(cout).astype(np.float32) * 0.1
        var = rng.uniform(0.5, 1.5, cout).astype(np.float32)
        inits = [numpy_helper.from_array(a, "%s_%s" % (name, k)) for k, a in
                 (("w", w), ("b", b), ("scale", scale), ("bias", bias), ("mean", mean), ("var", var))]
        nodes = [
            helper.make_node("Conv", [x, name + "_w", name + "_b"], [name + "_c"],
                             kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("BatchNormalization", [name + "_c", name + "_scale", name + "_bias",
                                                    name + "_mean", name + "_var"],
                             [name + "_n"], epsilon=1e-5),
            helper.make_node("Relu", [name + "_n"], [name + "_r"]),
            helper.make_node("MaxPool", [name + "_r"], [name + "_p"], kernel_shape=[2, 2],
                             strides=[2, 2]),
        ]
        return nodes, inits, name + "_p"

    n1, i1, y1 = conv_bn("l1", 3, 8, "x")
    n2, i2, y2 = conv_bn("l2", 8, 16, y1)
    fc_w = (rng.standard_normal((16 * 4 * 4, 10)) / 16).astype(np.float32)
    fc_b = rng.standard_normal(10).astype(np.float32)
    nodes = n1 + n2 + [
        helper.make_node("Flatten", [y2], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"]),
    ]
    g = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        i1 + i2 + [numpy_helper.from_array(fc_w, "fc_w"), numpy_helper.from_array(fc_b, "fc_b")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def encoder_block(path, rng, d=32, heads=4):
    """A transformer encoder layer as exporters write it: LayerNormalization,
    Q/K/V MatMuls, Shape->Gather->Concat->Reshape chains to split heads,
    Transpose, scaled QK^T with a Where-based padding mask, Softmax, the
    attention output, and an Erf-based GELU feed-forward, with symbolic
    batch and sequence dims."""
    dh = d // heads
    T = TensorProto

    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32), name)

    def c(name, value, dtype=np.int64):
        return numpy_helper.from_array(np.array(value, dtype=dtype), name)

    inits = [w("wq", d, d), w("wk", d, d), w("wv", d, d), w("wo", d, d), w("w1", d, 4 * d),
             w("w2", 4 * d, d), numpy_helper.from_array(np.ones(d, np.float32), "ln_s"),
             numpy_helper.from_array(np.zeros(d, np.float32), "ln_b"),
             c("i0", [0]), c("i1", [1]), c("heads_dh", [heads, dh]), c("minus1", [-1]),
             c("d_", [d]), c("ax1", [1]), c("ax2", [2]),
             numpy_helper.from_array(np.array(1 / np.sqrt(dh), np.float32), "scale"),
             numpy_helper.from_array(np.array(-1e9, np.float32), "neg"),
             numpy_helper.from_array(np.array(np.sqrt(0.5), np.float32), "rsqrt2"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    N = helper.make_node
    nodes = [
        N("LayerNormalization", ["x", "ln_s", "ln_b"], ["ln"], axis=-1, epsilon=1e-5),
        N("Shape", ["x"], ["shp"]),
        N("Gather", ["shp", "i0"], ["B"], axis=0),
        N("Gather", ["shp", "i1"], ["S"], axis=0),
        N("Concat", ["B", "S", "heads_dh"], ["split_shape"], axis=0),
        N("Concat", ["B", "S", "d_"], ["merge_shape"], axis=0),
    ]
    for p in "qkv":
        nodes += [N("MatMul", ["ln", "w" + p], [p + "0"]),
                  N("Reshape", [p + "0", "split_shape"], [p + "1"]),
                  N("Transpose", [p + "1"], [p + "h"], perm=[0, 2, 1, 3])]
    nodes += [
        N("Transpose", ["kh"], ["kt"], perm=[0, 1, 3, 2]),
        N("MatMul", ["qh", "kt"], ["qk"]),
        N("Mul", ["qk", "scale"], ["qks"]),
        # mask: [B, S] of 1 (keep) / 0 (pad) -> [B, 1, 1, S] booleans
        N("Cast", ["mask"], ["maskb"], to=T.BOOL),
        N("Unsqueeze", ["maskb", "ax1"], ["m1"]),
        N("Unsqueeze", ["m1", "ax2"], ["m2"]),
        N("Where", ["m2", "qks", "neg"], ["masked"]),
        N("Softmax", ["masked"], ["probs"], axis=-1),
        N("MatMul", ["probs", "vh"], ["ctx"]),
        N("Transpose", ["ctx"], ["ctxt"], perm=[0, 2, 1, 3]),
        N("Reshape", ["ctxt", "merge_shape"], ["ctxm"]),
        N("MatMul", ["ctxm", "wo"], ["attn"]),
        N("Add", ["x", "attn"], ["res1"]),
        N("MatMul", ["res1", "w1"], ["h1"]),
        N("Mul", ["h1", "rsqrt2"], ["h2"]),
        N("Erf", ["h2"], ["h3"]),
        N("Add", ["h3", "one"], ["h4"]),
        N("Mul", ["h1", "h4"], ["h5"]),
        N("Mul", ["h5", "half"], ["gelu"]),
        N("MatMul", ["gelu", "w2"], ["ff"]),
        N("Add", ["res1", "ff"], ["y"]),
    ]
    g = helper.make_graph(
        nodes, "encoder",
        [helper.make_tensor_value_info("x", T.FLOAT, ["batch", "seq", d]),
         helper.make_tensor_value_info("mask", T.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["batch", "seq", d])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def test_cnn_matches_onnxruntime(daemon, tmp_path):
    rng = np.random.default_rng()
    path = str(tmp_path / "cnn.onnx")
    cnn(path, rng)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    with cudaep.connect(daemon) as c, c.load(path) as s:
        for batch in (1, 4):
            x = rng.standard_normal((batch, 3, 16, 16)).astype(np.float32)
            got = s.run({"x": x})["logits"]
            want = ref.run(None, {"x": x})[0]
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_encoder_block_matches_onnxruntime(daemon, tmp_path):
    rng = np.random.default_rng()
    path = str(tmp_path / "encoder.onnx")
    encoder_block(path, rng)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    with cudaep.connect(daemon) as c, c.load(path) as s:
        assert s.inputs[0].shape == ("batch", "seq", 32)
        for batch, seq in ((1, 7), (3, 16), (2, 5)):
            x = rng.standard_normal((batch, seq, 32)).astype(np.float32)
            mask = (rng.uniform(size=(batch, seq)) > 0.2).astype(np.int64)
            mask[:, 0] = 1
            got = s.run({"x": x, "mask": mask})["y"]
            want = ref.run(None, {"x": x, "mask": mask})[0]
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
