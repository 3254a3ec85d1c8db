"""Element types through the Python client against a real cudaepd:
bfloat16 tensors go in and come out as ml_dtypes.bfloat16 arrays, through
run(), run(copy=False), submit() (copied and in place in a region) and
InferenceSession.run(), with values checked against float32 references
computed here; the four float8 types go in and out as ml_dtypes' arrays
and Cast to and from them (saturate either way) is ml_dtypes' conversion;
so are the 4-bit types (int4, uint4, float4_e2m1fn: a byte each), in and
out; arrays of the types cudaep does not store (float8_e8m0fnu, int2,
uint2) are refused with a TypeError naming the tensor and its dtype before
anything is sent."""
import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import cudaep

BF16 = ml_dtypes.bfloat16
FLOAT8 = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2,
          ml_dtypes.float8_e5m2fnuz]
F8_ONNX = [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2,
           TensorProto.FLOAT8E5M2FNUZ]
# ml_dtypes' types that cudaep does not store.
UNSTORED = [ml_dtypes.float8_e8m0fnu, ml_dtypes.int2, ml_dtypes.uint2]
FOUR_BIT = [(ml_dtypes.int4, TensorProto.INT4), (ml_dtypes.uint4, TensorProto.UINT4),
            (ml_dtypes.float4_e2m1fn, TensorProto.FLOAT4E2M1)]


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


def test_bfloat16_and_float8_are_dtypes_of_the_client():
    assert np.dtype(BF16) in cudaep.DTYPES
    for t in FLOAT8 + [t for t, _ in FOUR_BIT]:
        assert np.dtype(t) in cudaep.DTYPES
    for t in UNSTORED:
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


def test_unstored_types_are_refused_naming_the_tensor(daemon, tmp_path):
    rng = np.random.default_rng()
    w = rng.standard_normal(8).astype(np.float32)
    path = bf16_model(str(tmp_path / "bf16.onnx"), w)
    x, f = inputs(rng, 2)
    with cudaep.connect(daemon) as c, c.load(path) as s, c.region(1 << 12) as r:
        sess = cudaep.InferenceSession(path, client=c)
        for t in UNSTORED:
            name = np.dtype(t).name
            with np.errstate(invalid="ignore"):
                xu = x.astype(np.float32).astype(t)
            for call in (lambda: s.run({"x": xu, "f": f}),
                         lambda: s.submit({"x": xu, "f": f}),
                         lambda: sess.run(None, {"x": xu, "f": f})):
                with pytest.raises(TypeError) as e:
                    call()
                assert not isinstance(e.value, cudaep.Error), "refused before it is sent"
                assert "input 'x'" in str(e.value) and name in str(e.value)
            # An output array given to submit() is refused the same way.
            with pytest.raises(TypeError) as e:
                s.submit({"x": x, "f": f}, outputs={"y": r.array(t, (2, 8))})
            assert "output 'y'" in str(e.value) and name in str(e.value)
        # A float8 array where the model takes bfloat16 is the daemon's
        # EDTYPE, a stored type of the wrong kind.
        with pytest.raises(cudaep.InvalidType) as e:
            s.run({"x": x.astype(np.float32).astype(FLOAT8[0]), "f": f})
        assert "'x'" in str(e.value) and "float8e4m3fn" in str(e.value)
        # Nothing reached the daemon: the session runs on.
        check_outputs(s.run({"x": x, "f": f}), x, f, w)
        sess.close()
        c.ping()


def _f8_model(path, saturate):
    """x (float32, [n]) -> y_T = Cast(x, T, saturate) for each float8 type
    T, and each back: z_T = Cast(y_T, float); and the float8 inputs
    e_T cast to float32, f_T."""
    n = helper.make_node
    nodes, ins, outs = [], [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])], []
    for t, k in zip(FLOAT8, F8_ONNX):
        tag = np.dtype(t).name
        nodes += [n("Cast", ["x"], ["y_" + tag], to=k, saturate=saturate),
                  n("Cast", ["y_" + tag], ["z_" + tag], to=TensorProto.FLOAT),
                  n("Cast", ["e_" + tag], ["f_" + tag], to=TensorProto.FLOAT)]
        ins.append(helper.make_tensor_value_info("e_" + tag, k, ["n"]))
        outs += [helper.make_tensor_value_info("y_" + tag, k, ["n"]),
                 helper.make_tensor_value_info("z_" + tag, TensorProto.FLOAT, ["n"]),
                 helper.make_tensor_value_info("f_" + tag, TensorProto.FLOAT, ["n"])]
    model = helper.make_model(helper.make_graph(nodes, "f8", ins, outs),
                              opset_imports=[helper.make_opsetid("", 19)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def test_float8_through_cast_is_ml_dtypes_conversion(daemon, tmp_path):
    rng = np.random.default_rng()
    x = np.concatenate([rng.standard_normal(200).astype(np.float32) * 30,
                        np.array([0, -0.0, 1e-9, 448, 449, 500, 1e10, np.inf, -np.inf, np.nan,
                                  57344, 61440, -70000], np.float32)])
    with cudaep.connect(daemon) as c:
        for saturate in (1, 0):
            with c.load(_f8_model(str(tmp_path / ("f8_%d.onnx" % saturate)), saturate)) as s:
                assert s.inputs[1].dtype is FLOAT8[0] or \
                    np.dtype(s.inputs[1].dtype) == np.dtype(FLOAT8[0])
                assert s.inputs[1].type == "tensor(float8e4m3fn)"
                feed = {"x": x}
                for t in FLOAT8:
                    # Every code of the type, NaNs included, as an input.
                    feed["e_" + np.dtype(t).name] = np.arange(256, dtype=np.uint8).view(t)[
                        np.arange(x.size) % 256]
                out = s.run(feed)
                for t in FLOAT8:
                    tag = np.dtype(t).name
                    big = float(ml_dtypes.finfo(t).max)
                    src = np.where(np.isnan(x), x, np.clip(x, -big, big)) if saturate else x
                    with np.errstate(over="ignore", invalid="ignore"):
                        want = src.astype(t)
                    y = out["y_" + tag]
                    assert y.dtype == np.dtype(t)
                    np.testing.assert_array_equal(y.view(np.uint8), want.view(np.uint8),
                                                  err_msg="%s saturate=%d" % (tag, saturate))
                    np.testing.assert_array_equal(out["z_" + tag], want.astype(np.float32))
                    np.testing.assert_array_equal(out["f_" + tag],
                                                  feed["e_" + tag].astype(np.float32))


def _four_bit_model(path):
    """x (float32, [n]) -> y_<t> = Cast(x, t) for each 4-bit type t; e_<t> (t, [n]) ->
    f_<t> = Cast(e_<t>, float32)."""
    nodes, ins, outs = [], [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])], []
    for t, code in FOUR_BIT:
        tag = np.dtype(t).name
        nodes.append(helper.make_node("Cast", ["x"], ["y_" + tag], to=code))
        nodes.append(helper.make_node("Cast", ["e_" + tag], ["f_" + tag], to=TensorProto.FLOAT))
        ins.append(helper.make_tensor_value_info("e_" + tag, code, ["n"]))
        outs.append(helper.make_tensor_value_info("y_" + tag, code, ["n"]))
        outs.append(helper.make_tensor_value_info("f_" + tag, TensorProto.FLOAT, ["n"]))
    graph = helper.make_graph(nodes, "four_bit", ins, outs)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)]), path)
    return path


def test_4bit_types_go_in_and_out_as_ml_dtypes_arrays(daemon, tmp_path):
    rng = np.random.default_rng()
    x = np.concatenate([rng.uniform(-20, 20, 300).astype(np.float32),
                        np.array([0, -0.0, 7.9, 8, -8, -8.5, 15, 16, 0.25, 2.5, 5, 6.5,
                                  np.inf, -np.inf], np.float32)])
    with cudaep.connect(daemon) as c, c.load(_four_bit_model(str(tmp_path / "4bit.onnx"))) as s:
        types = {i.name: i for i in s.inputs}
        feed = {"x": x}
        for t, code in FOUR_BIT:
            tag = np.dtype(t).name
            assert np.dtype(types["e_" + tag].dtype) == np.dtype(t)
            assert types["e_" + tag].dtype_code == code
            # Every nibble, high nibbles set in some (only the low one is read).
            codes = (np.arange(x.size) % 16).astype(np.uint8)
            codes[::3] |= 0xa0
            feed["e_" + tag] = codes.view(t)
        out = s.run(feed)
        for t, _ in FOUR_BIT:
            tag = np.dtype(t).name
            with np.errstate(invalid="ignore", over="ignore"):
                want = x.astype(t)
            y = out["y_" + tag]
            assert y.dtype == np.dtype(t) and y.shape == x.shape
            np.testing.assert_array_equal(y.astype(np.float32), want.astype(np.float32),
                                          err_msg=tag)
            np.testing.assert_array_equal(np.signbit(y.astype(np.float32)),
                                          np.signbit(want.astype(np.float32)), err_msg=tag)
            assert (y.view(np.uint8) & 0xf == want.view(np.uint8) & 0xf).all(), tag
            low = (feed["e_" + tag].view(np.uint8) & 0xf).view(t)
            np.testing.assert_array_equal(out["f_" + tag], low.astype(np.float32), err_msg=tag)
        # int4 is written sign-extended: -8 is 0xf8.
        assert out["y_int4"].view(np.uint8)[x.size - 10] == 0xf8


def test_an_int2_model_is_unsupported(daemon, tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)], "i2",
        [helper.make_tensor_value_info("x", TensorProto.INT2, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    path = str(tmp_path / "i2.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)]), path)
    with cudaep.connect(daemon) as c:
        with pytest.raises(cudaep.Error) as e:
            c.load(path)
        assert e.value.name == "EUNSUPPORTED" and "'x'" in e.value.detail
        assert "int2" in e.value.detail
