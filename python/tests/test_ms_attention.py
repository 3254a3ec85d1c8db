"""onnxruntime's com.microsoft RotaryEmbedding through the daemon (host
backend), against onnxruntime's CPU provider: 3-D and 4-D inputs, a
single position offset and a table of positions, in halves and
interleaved, the whole head and a partial rotary_embedding_dim, in
float32 and float16 (the types onnxruntime's CPU kernel takes; cudaep
rounds each product to the type, as it does for ai.onnx's
RotaryEmbedding, so float16 is compared within two units of float16).
"""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import cudaep

MS = "com.microsoft"
F, F16 = TensorProto.FLOAT, TensorProto.FLOAT16
NP = {F: np.float32, F16: np.float16}


def rope_model(x_shape, cache_shape, pos_shape, attrs, dtype):
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS,
                            **attrs)
    graph = helper.make_graph(
        [node], "rope",
        [helper.make_tensor_value_info("x", dtype, x_shape),
         helper.make_tensor_value_info("pos", TensorProto.INT64, pos_shape),
         helper.make_tensor_value_info("cos", dtype, cache_shape),
         helper.make_tensor_value_info("sin", dtype, cache_shape)],
        [helper.make_tensor_value_info("y", dtype, x_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid(MS, 1)])


CASES = [
    # x shape, rows of the caches, attributes, position form
    ((2, 5, 32), 16, {"num_heads": 4}, "offset"),
    ((2, 5, 32), 16, {"num_heads": 4, "interleaved": 1}, "table"),
    ((2, 5, 32), 16, {"num_heads": 2, "rotary_embedding_dim": 8}, "table"),
    ((2, 5, 32), 16, {"num_heads": 2, "rotary_embedding_dim": 8, "interleaved": 1}, "offset"),
    ((3, 2, 7, 16), 20, {}, "table"),
    ((3, 2, 7, 16), 20, {"interleaved": 1}, "offset"),
    ((1, 4, 3, 64), 10, {"num_heads": 4, "rotary_embedding_dim": 32}, "table"),
]


@pytest.mark.parametrize("dtype", [F, F16])
@pytest.mark.parametrize("case", CASES)
def test_rotary_embedding_matches_onnxruntime(daemon, tmp_path, case, dtype):
    shape, rows, attrs, form = case
    rng = np.random.default_rng(len(shape) * 100 + rows)
    b = shape[0]
    s = shape[1] if len(shape) == 3 else shape[2]
    if "rotary_embedding_dim" in attrs:
        rot = attrs["rotary_embedding_dim"]
    else:
        rot = shape[2] // attrs["num_heads"] if len(shape) == 3 else shape[3]
    half = rot // 2
    t = NP[dtype]
    x = rng.uniform(-2, 2, shape).astype(t)
    ang = rng.uniform(0, 6.3, (rows, half))
    cos, sin = np.cos(ang).astype(t), np.sin(ang).astype(t)
    if form == "offset":
        pos = np.array([rows - s], np.int64)
    else:
        pos = rng.integers(0, rows, (b, s)).astype(np.int64)
    model = rope_model(list(shape), [rows, half], list(pos.shape), attrs, dtype)
    path = tmp_path / "rope.onnx"
    path.write_bytes(model.SerializeToString())
    feed = {"x": x, "pos": pos, "cos": cos, "sin": sin}
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feed)[0]
    with cudaep.connect(daemon) as client:
        with client.load(str(path)) as sess:
            got = sess.run(feed)["y"]
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-6 if dtype == F else 2e-3
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=tol,
                               atol=tol)
