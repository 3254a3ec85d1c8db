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
