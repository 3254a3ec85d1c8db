"""Element types through the Python client against a real cudaepd:
bfloat16 tensors go in and come out as ml_dtypes.bfloat16 arrays, through
run(), run(copy=False), submit() (copied and in place in a region) and
InferenceSession.run(), with values checked against float32 references
computed here; float8 arrays, which cudaep does not store, are refused
with a TypeError naming the tensor and its dtype before anything is sent."""
import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import cudaep

BF16 = ml_dtypes.bfloat16
FLOAT8 = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2,
          ml_dtypes.float8_e5m2fnuz]


def bf16_model(path, w):
    """x (bfloat16, [n, 8]) ->
         same = Identity(x)                      bfloat16
         twice = Add(x, x)                       bfloat16, computed in bfloat16
         yf = Mul(Cast(x, float), w)             float32
         y = Cast(yf, bfloat16)                  bfloat16
       and f (float32, [n, 8]) -> fb = Cast(f, bfloat16)."""
    n = helper.make_node
    graph = helper.make_graph(
        [n("Identity", ["x"], ["same"]),
         n("Add", ["x", "x"], ["twice"]),
         n("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
         n("Mul", ["xf", "w"], ["yf"]),
         n("Cast", ["yf"], ["y"], to=TensorProto.BFLOAT16),
         n("Cast", ["f"], ["fb"], to=TensorProto.BFLOAT16)],
        "bf16",
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, ["n", 8]),
         helper.make_tensor_value_info("f", TensorProto.FLOAT, ["n", 8])],
        [helper.make_tensor_value_info("same", TensorProto.BFLOAT16, ["n", 8]),
         helper.make_tensor_value_info("twice", TensorProto.BFLOAT16, ["n", 8]),
         helper.make_tensor_value_info("yf", TensorProto.FLOAT, ["n", 8]),
         helper.make_tensor_value_info("y", TensorProto.BFLOAT16, ["n", 8]),
         helper.make_tensor_value_info("fb", TensorProto.BFLOAT16, ["n", 8])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def bits(a):
    return np.asarray(a).view(np.uint16)


def check_outputs(out, x, f, w):
    """Each output against its float32 reference."""
    for name in ("same", "twice", "y", "fb"):
        assert out[name].dtype == np.dtype(BF16), (name, out[name].dtype)
        assert out[name].shape == x.shape
    assert out["yf"].dtype == np.float32
    xf = x.astype(np.float32)
    # Identity: the very bits.
    np.testing.assert_array_equal(bits(out["same"]), bits(x))
    # x + x is exact in bfloat16.
    np.testing.assert_array_equal(out["twice"].astype(np.float32), 2 * xf)
    # A float32 product of bfloat16 values, then rounded to nearest even:
    # the float32 reference rounded the same way, within bfloat16's 2**-8.
    yf = xf * w
    np.testing.assert_allclose(out["yf"], yf, rtol=1e-6)
    np.testing.assert_array_equal(bits(out["y"]), bits(yf.astype(BF16)))
    np.testing.assert_allclose(out["y"].astype(np.float32), yf, rtol=2 ** -8)
    np.testing.assert_array_equal(bits(out["fb"]), bits(f.astype(BF16)))
    np.testing.assert_allclose(out["fb"].astype(np.float32), f, rtol=2 ** -8)


def inputs(rng, n):
    f = rng.standard_normal((n, 8)).astype(np.float32)
    x = (rng.standard_normal((n, 8)) * 3).astype(np.float32).astype(BF16)
    return x, f


def test_bfloat16_is_a_dtype_of_the_client():
    assert np.dtype(BF16) in cudaep.DTYPES
    for t in FLOAT8:
        assert np.dtype(t) not in cudaep.DTYPES


def test_bfloat16_round_trips_through_run(daemon, tmp_path):
    rng = np.random.default_rng()
    w = rng.standard_normal(8).astype(np.float32)
    path = bf16_model(str(tmp_path / "bf16.onnx"), w)
    with cudaep.connect(daemon) as c, c.load(path) as s:
        assert s.inputs[0].dtype is BF16 and s.inputs[0].dtype_code == 16
        assert s.inputs[0].type == "tensor(bfloat16)"
        assert [o.type for o in s.outputs] == ["tensor(bfloat16)"] * 2 + ["tensor(float)"] + \
            ["tensor(bfloat16)"] * 2
        for n in (1, 5, 64):
            x, f = inputs(rng, n)
            check_outputs(s.run({"x": x, "f": f}), x, f, w)
        # Views of the session's region, valid until the next run.
        x, f = inputs(rng, 3)
        check_outputs(s.run({"x": x, "f": f}, copy=False), x, f, w)
        # Special values keep their bits.
        special = np.array([0.0, -0.0, np.inf, -np.inf, 1e38, -3e-39, 1.0, -2.5],
                           np.float32).astype(BF16).reshape(1, 8)
        out = s.run({"x": special, "f": np.zeros((1, 8), np.float32)})
        np.testing.assert_array_equal(bits(out["same"]), bits(special))


def test_bfloat16_round_trips_through_submit(async_daemon, tmp_path):
    rng = np.random.default_rng()
    w = rng.standard_normal(8).astype(np.float32)
    path = bf16_model(str(tmp_path / "bf16.onnx"), w)
    with cudaep.connect(async_daemon) as c, c.load(path) as s:
        xs = [inputs(rng, n) for n in (2, 7, 2)]
        for (x, f), p in [(xf, s.submit({"x": xf[0], "f": xf[1]})) for xf in xs]:
            check_outputs(p.wait(), x, f, w)
        # In place: bfloat16 arrays that live in a region, in and out.
        with c.region(1 << 16) as r:
            x, f = inputs(rng, 4)
            rx = r.array(BF16, (4, 8))
            rx[...] = x
            ry = r.array(BF16, (4, 8), offset=1024)
            out = s.submit({"x": rx, "f": f}, outputs={"y": ry}).wait()
            assert out["y"] is ry
            check_outputs(out, x, f, w)


def test_bfloat16_through_inference_session(daemon, tmp_path):
    rng = np.random.default_rng()
    w = rng.standard_normal(8).astype(np.float32)
    path = bf16_model(str(tmp_path / "bf16.onnx"), w)
    with cudaep.InferenceSession(path, socket=daemon) as sess:
        assert [i.type for i in sess.get_inputs()] == ["tensor(bfloat16)", "tensor(float)"]
        x, f = inputs(rng, 6)
        names = ["same", "twice", "yf", "y", "fb"]
        check_outputs(dict(zip(names, sess.run(names, {"x": x, "f": f}))), x, f, w)
        [y] = sess.run(["y"], {"x": x, "f": f})
        np.testing.assert_array_equal(bits(y), bits((x.astype(np.float32) * w).astype(BF16)))


def test_float8_arrays_are_refused_naming_the_tensor(daemon, tmp_path):
    rng = np.random.default_rng()
    w = rng.standard_normal(8).astype(np.float32)
    path = bf16_model(str(tmp_path / "bf16.onnx"), w)
    x, f = inputs(rng, 2)
    with cudaep.connect(daemon) as c, c.load(path) as s, c.region(1 << 12) as r:
        sess = cudaep.InferenceSession(path, client=c)
        for t in FLOAT8:
            name = np.dtype(t).name
            x8 = x.astype(np.float32).astype(t)
            for call in (lambda: s.run({"x": x8, "f": f}),
                         lambda: s.submit({"x": x8, "f": f}),
                         lambda: sess.run(None, {"x": x8, "f": f})):
                with pytest.raises(TypeError) as e:
                    call()
                assert not isinstance(e.value, cudaep.Error), "refused before it is sent"
                assert "input 'x'" in str(e.value) and name in str(e.value)
            # An output array given to submit() is refused the same way.
            with pytest.raises(TypeError) as e:
                s.submit({"x": x, "f": f}, outputs={"y": r.array(t, (2, 8))})
            assert "output 'y'" in str(e.value) and name in str(e.value)
        # Nothing reached the daemon: the session runs on.
        check_outputs(s.run({"x": x, "f": f}), x, f, w)
        sess.close()
        c.ping()


def test_a_float8_model_is_unsupported(daemon, tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)], "f8",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT8E4M3FN, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    path = str(tmp_path / "f8.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), path)
    with cudaep.connect(daemon) as c:
        with pytest.raises(cudaep.Error) as e:
            c.load(path)
        assert e.value.name == "EUNSUPPORTED" and "'x'" in e.value.detail
