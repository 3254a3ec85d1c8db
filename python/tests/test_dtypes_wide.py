"""float64, int16, uint16, uint32 and uint64 through the Python client
against a real cudaepd on the host backend: numpy arrays of each type go in
and come out as themselves (uint64 values past 2**63 included), arithmetic
wraps as numpy's does, comparisons order uint64 as unsigned, float64 is
computed in double, and Cast between every pair of the 13 stored types
gives what numpy's astype() gives (ml_dtypes' for bfloat16), on values for
which numpy's conversion is defined."""
import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import cudaep

WIDE = [np.float64, np.int16, np.uint16, np.uint32, np.uint64]
ALL = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int64, np.int32, np.int16,
       np.int8, np.uint64, np.uint32, np.uint16, np.uint8, np.bool_]
ONNX_TYPE = {np.dtype(t): helper.np_dtype_to_tensor_dtype(np.dtype(t)) for t in ALL}
ORT_NAME = {np.float64: "double", np.int16: "int16", np.uint16: "uint16", np.uint32: "uint32",
            np.uint64: "uint64"}


def _save(path, nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "wide", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def _vi(name, dt, shape):
    return helper.make_tensor_value_info(name, ONNX_TYPE[np.dtype(dt)], shape)


def _tag(dt):
    return np.dtype(dt).name


def _random(rng, dt, shape, lo=None, hi=None):
    """Values over the whole range of an integer type (or [lo, hi)); floats
    in [-8, 8) with more bits than float32 keeps for float64."""
    dt = np.dtype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo = info.min if lo is None else lo
        hi = info.max if hi is None else hi - 1
        return rng.integers(lo, hi, size=shape, dtype=dt, endpoint=True)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    return (rng.random(shape) * 16 - 8).astype(dt)


def test_the_new_types_are_client_dtypes_with_onnxruntime_s_names(daemon, tmp_path):
    path = _save(str(tmp_path / "id.onnx"),
                 [helper.make_node("Identity", ["x_" + _tag(t)], ["y_" + _tag(t)]) for t in WIDE],
                 [_vi("x_" + _tag(t), t, [3]) for t in WIDE],
                 [_vi("y_" + _tag(t), t, [3]) for t in WIDE])
    for t in WIDE:
        assert np.dtype(t) in cudaep.DTYPES
    with cudaep.connect(daemon) as c, c.load(path) as s:
        for info, t in zip(s.inputs, WIDE):
            assert info.dtype is t or np.dtype(info.dtype) == np.dtype(t)
            assert info.type == "tensor(%s)" % ORT_NAME[t]
        feed = {"x_float64": np.array([0.1, -1e-300, np.inf]),
                "x_int16": np.array([-32768, 0, 32767], np.int16),
                "x_uint16": np.array([0, 1, 65535], np.uint16),
                "x_uint32": np.array([0, 7, 2 ** 32 - 1], np.uint32),
                "x_uint64": np.array([0, 2 ** 63 + 5, 2 ** 64 - 1], np.uint64)}
        out = s.run(feed)
        for t in WIDE:
            y = out["y_" + _tag(t)]
            assert y.dtype == np.dtype(t)
            np.testing.assert_array_equal(y, feed["x_" + _tag(t)])


def test_arithmetic_wraps_and_uint64_orders_as_unsigned(daemon, tmp_path):
    rng = np.random.default_rng()
    nodes, ins, outs = [], [], []
    for t in WIDE[1:]:
        a, b = "a_" + _tag(t), "b_" + _tag(t)
        ins += [_vi(a, t, [64]), _vi(b, t, [64])]
        for op in ("Add", "Sub", "Mul", "Less", "Max"):
            y = "%s_%s" % (op.lower(), _tag(t))
            nodes.append(helper.make_node(op, [a, b], [y]))
            outs.append(_vi(y, np.bool_ if op == "Less" else t, [64]))
    path = _save(str(tmp_path / "arith.onnx"), nodes, ins, outs, opset=14)
    with cudaep.connect(daemon) as c, c.load(path) as s:
        for _ in range(3):
            feed = {}
            for t in WIDE[1:]:
                feed["a_" + _tag(t)] = _random(rng, t, 64)
                feed["b_" + _tag(t)] = _random(rng, t, 64)
            out = s.run(feed)
            with np.errstate(over="ignore"):
                for t in WIDE[1:]:
                    a, b = feed["a_" + _tag(t)], feed["b_" + _tag(t)]
                    np.testing.assert_array_equal(out["add_" + _tag(t)], a + b)
                    np.testing.assert_array_equal(out["sub_" + _tag(t)], a - b)
                    np.testing.assert_array_equal(out["mul_" + _tag(t)], a * b)
                    np.testing.assert_array_equal(out["less_" + _tag(t)], a < b)
                    np.testing.assert_array_equal(out["max_" + _tag(t)], np.maximum(a, b))


def test_unsigned_division_and_float64_in_double(daemon, tmp_path):
    rng = np.random.default_rng()
    uns = [np.uint16, np.uint32, np.uint64]
    nodes = [helper.make_node("Div", ["a_" + _tag(t), "b_" + _tag(t)], ["q_" + _tag(t)])
             for t in uns]
    nodes += [helper.make_node("Div", ["x", "w"], ["d"]),
              helper.make_node("Exp", ["x"], ["e"]),
              helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
              helper.make_node("MatMul", ["m", "m"], ["mm"])]
    ins = [_vi(n + "_" + _tag(t), t, [40]) for t in uns for n in "ab"]
    ins += [_vi("x", np.float64, [40]), _vi("m", np.float64, [5, 5])]
    outs = [_vi("q_" + _tag(t), t, [40]) for t in uns]
    outs += [_vi("d", np.float64, [40]), _vi("e", np.float64, [40]), _vi("s", np.float64, []),
             _vi("mm", np.float64, [5, 5])]
    w = np.full(40, 3.0)
    path = _save(str(tmp_path / "div.onnx"), nodes, ins, outs,
                 [numpy_helper.from_array(w, "w")], opset=14)
    with cudaep.connect(daemon) as c, c.load(path) as s:
        feed = {}
        for t in uns:
            feed["a_" + _tag(t)] = _random(rng, t, 40)
            feed["b_" + _tag(t)] = _random(rng, t, 40, lo=1)
        feed["x"] = rng.standard_normal(40)
        feed["m"] = rng.standard_normal((5, 5))
        out = s.run(feed)
        for t in uns:
            np.testing.assert_array_equal(out["q_" + _tag(t)],
                                          feed["a_" + _tag(t)] // feed["b_" + _tag(t)])
        # IEEE double results: division exactly, libm's exp() to an ulp.
        np.testing.assert_array_equal(out["d"], feed["x"] / 3.0)
        np.testing.assert_allclose(out["e"], np.exp(feed["x"]), rtol=1e-15)
        assert abs(out["s"] - np.sum(feed["x"])) <= 1e-13 * np.sum(np.abs(feed["x"]))
        np.testing.assert_allclose(out["mm"], feed["m"] @ feed["m"], rtol=1e-13, atol=1e-14)
        # Not float32 arithmetic: that would miss by far more than this.
        assert np.max(np.abs(out["d"] - (feed["x"].astype(np.float32) / 3).astype(np.float64))) \
            > 1e-12


def _source_values(rng, t, n):
    """Source values whose conversion to every stored type numpy defines and
    cudaep gives the same way: floats in [0, 127) (none negative, as numpy
    leaves a negative float to an unsigned type to the platform), integers
    of magnitude below 2**24 (so that their conversion to the 16-bit floats
    rounds once from the exact value either way), bools."""
    dt = np.dtype(t)
    if dt.kind == "b":
        return _random(rng, t, n)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return _random(rng, t, n, lo=max(info.min, -2 ** 24 + 1), hi=min(info.max, 2 ** 24))
    return (rng.random(n) * 127).astype(t)


def test_cast_between_every_pair_of_types_is_numpy_s_astype(daemon, tmp_path):
    rng = np.random.default_rng()
    n = 257
    with cudaep.connect(daemon) as c:
        for f in ALL:
            # One model per source type: x -> a Cast to each of the 13.
            nodes, outs = [], []
            for t in ALL:
                nodes.append(helper.make_node("Cast", ["x"], ["y_" + _tag(t)],
                                              to=ONNX_TYPE[np.dtype(t)]))
                outs.append(_vi("y_" + _tag(t), t, [n]))
            path = _save(str(tmp_path / ("cast_%s.onnx" % _tag(f))), nodes, [_vi("x", f, [n])],
                         outs, opset=17)
            x = _source_values(rng, f, n)
            if np.dtype(f) == np.uint64:
                # Values past 2**63 are uint64's own: unsigned to every
                # integer type (wrapping) and to the floats.
                x[:6] = np.array([2 ** 63, 2 ** 63 + 1, 2 ** 64 - 1, 2 ** 63 + 2 ** 40,
                                  2 ** 53 + 1, 2 ** 54 + 2 ** 30 + 1], np.uint64)
            with c.load(path) as s:
                out = s.run({"x": x})
            for t in ALL:
                with np.errstate(over="ignore"):  # uint64 past float16's range
                    want = x.astype(t)
                y = out["y_" + _tag(t)]
                assert y.dtype == np.dtype(t), (f, t)
                np.testing.assert_array_equal(y.view(np.uint8), want.view(np.uint8),
                                              err_msg="%s to %s" % (_tag(f), _tag(t)))


def test_float_to_signed_integers_truncate_and_integers_wrap(daemon, tmp_path):
    nodes = [helper.make_node("Cast", ["f"], ["f_i16"], to=TensorProto.INT16),
             helper.make_node("Cast", ["f"], ["f_i64"], to=TensorProto.INT64),
             helper.make_node("Cast", ["big"], ["big_u16"], to=TensorProto.UINT16),
             helper.make_node("Cast", ["big"], ["big_i16"], to=TensorProto.INT16),
             helper.make_node("Cast", ["big"], ["big_u32"], to=TensorProto.UINT32),
             helper.make_node("Cast", ["f"], ["f_f16"], to=TensorProto.FLOAT16)]
    path = _save(str(tmp_path / "edges.onnx"), nodes,
                 [_vi("f", np.float64, [6]), _vi("big", np.int64, [5])],
                 [_vi("f_i16", np.int16, [6]), _vi("f_i64", np.int64, [6]),
                  _vi("big_u16", np.uint16, [5]), _vi("big_i16", np.int16, [5]),
                  _vi("big_u32", np.uint32, [5]), _vi("f_f16", np.float16, [6])])
    f = np.array([-2.7, 2.7, -32768.9, 1e10, 1 + 2 ** -11 + 2 ** -40, -0.5])
    big = np.array([-1, 65536 + 7, 2 ** 40 + 2 ** 31, -(2 ** 63), 2 ** 63 - 1], np.int64)
    with cudaep.connect(daemon) as c, c.load(path) as s:
        out = s.run({"f": f, "big": big})
    np.testing.assert_array_equal(out["f_i16"][[0, 1, 2, 5]], f[[0, 1, 2, 5]].astype(np.int16))
    np.testing.assert_array_equal(out["f_i64"], f.astype(np.int64))
    for name, t in (("big_u16", np.uint16), ("big_i16", np.int16), ("big_u32", np.uint32)):
        np.testing.assert_array_equal(out[name], big.astype(t))
    # float64 to float16 rounds once (1 + 2**-11 + 2**-40 goes up); 1e10
    # is infinite there.
    with np.errstate(over="ignore"):
        want = f.astype(np.float16)
    np.testing.assert_array_equal(out["f_f16"].view(np.uint16), want.view(np.uint16))
    assert out["f_f16"].view(np.uint16)[4] == 0x3C01


def test_inference_session_runs_a_float64_model(daemon, tmp_path):
    rng = np.random.default_rng()
    c0 = rng.standard_normal(8)
    path = _save(str(tmp_path / "f64.onnx"),
                 [helper.make_node("Mul", ["x", "c"], ["m"]),
                  helper.make_node("Softmax", ["m"], ["y"], axis=-1)],
                 [_vi("x", np.float64, ["n", 8])], [_vi("y", np.float64, ["n", 8])],
                 [numpy_helper.from_array(c0, "c")], opset=13)
    x = rng.standard_normal((3, 8))
    with cudaep.InferenceSession(path, socket=daemon) as sess:
        assert [i.type for i in sess.get_inputs()] == ["tensor(double)"]
        [y] = sess.run(None, {"x": x})
    m = x * c0
    e = np.exp(m - m.max(axis=-1, keepdims=True))
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, e / e.sum(axis=-1, keepdims=True), rtol=1e-14)
    # A float32 array for a float64 input is refused, naming both.
    with cudaep.InferenceSession(path, socket=daemon) as sess:
        with pytest.raises(cudaep.InvalidType) as err:
            sess.run(None, {"x": x.astype(np.float32)})
    assert "float64" in str(err.value) and "float32" in str(err.value)
