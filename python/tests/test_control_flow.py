"""Control flow through the daemon (host backends): If, Loop and Scan models
built with onnx.helper, run by cudaepd and by onnxruntime's CPU provider on
the same fresh random inputs, must agree. Among them: an If whose
condition is computed from the data (read back at run time), one whose
branches differ in shape (a plan per condition), If inside a Loop body;
the ONNX Loop example (a body sliced by its iteration number), a while
loop whose body computes its condition, a Loop with a constant trip count
and scan outputs; a Scan RNN reading its weights from the model graph,
and a Scan along other axes, backward. fp16 sessions keep control flow in
float32 and stay within the half tolerance of onnxruntime's float32; the
refusals say why."""
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import cudaep

F = TensorProto.FLOAT
I64 = TensorProto.INT64
B = TensorProto.BOOL
n = helper.make_node
vi = helper.make_tensor_value_info


def _init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "ctrl", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def _save(model, tmp_path, name):
    path = str(tmp_path / name)
    onnx.save(model, path)
    return path


def _ref(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _check(daemon, tmp_path, model, feeds_list, rtol=1e-4, atol=1e-5, precision="fp32"):
    ref = _ref(model)
    path = _save(model, tmp_path, "m.onnx")
    names = [o.name for o in model.graph.output]
    with cudaep.connect(daemon) as c, c.load(path, precision=precision) as s:
        for feeds in feeds_list:
            got = s.run(feeds)
            want = ref.run(None, feeds)
            for name, w in zip(names, want):
                assert got[name].shape == w.shape, (name, got[name].shape, w.shape)
                if precision == "fp32":
                    np.testing.assert_allclose(got[name], w, rtol=rtol, atol=atol, err_msg=name)
                else:
                    err = np.linalg.norm(got[name] - w) / max(np.linalg.norm(w), 1e-6)
                    assert err <= 1e-2, (name, err)


def _branch(name, nodes, outputs, inits=()):
    return helper.make_graph(nodes, name, [], outputs, list(inits))


# --------------------------------------------------------------------- If

def if_computed_model():
    """cond = ReduceSum(x) > 0 (x has too many elements to key a plan):
    then y = x @ w + b, else y = -x @ w; w and b read from the model."""
    then_g = _branch("then", [n("MatMul", ["x", "w"], ["xw"]), n("Add", ["xw", "b"], ["t"])],
                     [vi("t", F, None)])
    else_g = _branch("else", [n("Neg", ["x"], ["nx"]), n("MatMul", ["nx", "w"], ["e"])],
                     [vi("e", F, None)])
    rng = np.random.default_rng(0)
    inits = [_init("w", rng.standard_normal((16, 8)).astype(np.float32)),
             _init("b", rng.standard_normal(8).astype(np.float32)),
             _init("zero", np.array(0, np.float32))]
    nodes = [n("ReduceSum", ["x"], ["s"], keepdims=0), n("Greater", ["s", "zero"], ["cond"]),
             n("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)]
    return _model(nodes, [vi("x", F, [8, 16])], [vi("y", F, [8, 8])], inits)


@pytest.mark.parametrize("backend_daemon", ["daemon", "async_daemon"])
def test_if_with_a_condition_computed_from_the_data(request, tmp_path, backend_daemon):
    daemon = request.getfixturevalue(backend_daemon)
    rng = np.random.default_rng(1)
    feeds = []
    for sign in (1, -1, 1, -1):
        x = (np.abs(rng.standard_normal((8, 16))) * sign).astype(np.float32)
        feeds.append({"x": x})
    _check(daemon, tmp_path, if_computed_model(), feeds)


def test_if_branches_of_other_shapes(daemon, tmp_path):
    then_g = _branch("then", [n("Identity", ["x"], ["t"])], [vi("t", F, None)])
    else_g = _branch("else", [n("Concat", ["x", "x"], ["e"], axis=1)], [vi("e", F, None)])
    model = _model([n("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
                   [vi("cond", B, []), vi("x", F, [2, 3])], [vi("y", F, [2, "w"])])
    rng = np.random.default_rng(2)
    feeds = [{"cond": np.array(c), "x": rng.standard_normal((2, 3)).astype(np.float32)}
             for c in (True, False, False, True)]
    _check(daemon, tmp_path, model, feeds)


def test_if_in_half_stays_float32(daemon, tmp_path):
    rng = np.random.default_rng(3)
    feeds = [{"x": (np.abs(rng.standard_normal((8, 16))) * s).astype(np.float32)}
             for s in (1, -1)]
    _check(daemon, tmp_path, if_computed_model(), feeds, precision="fp16")


# ------------------------------------------------------------------- Loop

def test_the_onnx_loop_example(daemon, tmp_path):
    """test_loop11: y accumulates x[i:i+1] and every y is a scan output."""
    body = helper.make_graph(
        [n("Identity", ["cond_in"], ["cond_out"]),
         n("Add", ["iter", "one"], ["end"]),
         n("Unsqueeze", ["iter", "axes"], ["s"]), n("Unsqueeze", ["end", "axes"], ["e"]),
         n("Slice", ["xs", "s", "e"], ["sl"]), n("Add", ["y_in", "sl"], ["y_out"]),
         n("Identity", ["y_out"], ["scan_out"])],
        "body", [vi("iter", I64, []), vi("cond_in", B, []), vi("y_in", F, [1])],
        [vi("cond_out", B, []), vi("y_out", F, [1]), vi("scan_out", F, [1])],
        [_init("xs", np.arange(1, 9, dtype=np.float32)), _init("one", np.array(1, np.int64)),
         _init("axes", np.array([0], np.int64))])
    model = _model([n("Loop", ["trip", "cond", "y"], ["res_y", "res_scan"], body=body)],
                   [vi("trip", I64, []), vi("cond", B, []), vi("y", F, [1])],
                   [vi("res_y", F, [1]), vi("res_scan", F, ["trips", 1])])
    feeds = [{"trip": np.array(t, np.int64), "cond": np.array(c), "y": np.array([-2], np.float32)}
             for t, c in ((5, True), (8, True), (0, True), (3, False))]
    _check(daemon, tmp_path, model, feeds)


@pytest.mark.parametrize("backend_daemon", ["daemon", "async_daemon"])
def test_a_while_loop_whose_body_computes_its_condition(request, tmp_path, backend_daemon):
    """Halves v until its norm is below the threshold t (read from the
    model graph), counting the iterations; an If in the body clips v."""
    daemon = request.getfixturevalue(backend_daemon)
    clip_then = _branch("then", [n("Clip", ["v1", "lo", "hi"], ["cl"])], [vi("cl", F, None)])
    clip_else = _branch("else", [n("Identity", ["v1"], ["c2"])], [vi("c2", F, None)])
    body = helper.make_graph(
        [n("Mul", ["v_in", "half"], ["v1"]),
         n("If", ["clip"], ["v2"], then_branch=clip_then, else_branch=clip_else),
         n("Add", ["k_in", "one"], ["k_out"]),
         n("ReduceL2", ["v2"], ["norm"], keepdims=0), n("Greater", ["norm", "t"], ["go"])],
        "body", [vi("i", I64, []), vi("c", B, []), vi("k_in", I64, []), vi("v_in", F, [4])],
        [vi("go", B, []), vi("k_out", I64, []), vi("v2", F, [4])],
        [_init("half", np.array(0.5, np.float32)), _init("one", np.array(1, np.int64)),
         _init("lo", np.array(-3, np.float32)), _init("hi", np.array(3, np.float32))])
    model = _model([n("Loop", ["m", "", "k0", "v"], ["k", "vf"], body=body)],
                   [vi("m", I64, []), vi("clip", B, []), vi("t", F, []), vi("v", F, [4])],
                   [vi("k", I64, []), vi("vf", F, [4])],
                   [_init("k0", np.array(0, np.int64))])
    rng = np.random.default_rng(4)
    feeds = []
    for m, clip, t in ((100, False, 0.01), (100, True, 0.5), (3, False, 1e-6), (0, True, 1.0)):
        feeds.append({"m": np.array(m, np.int64), "clip": np.array(clip),
                      "t": np.array(t, np.float32),
                      "v": (rng.standard_normal(4) * 10).astype(np.float32)})
    _check(daemon, tmp_path, model, feeds)


def test_a_loop_with_a_constant_trip_count_and_scan_outputs(daemon, tmp_path):
    """h = tanh(h @ w + x[i]), four iterations; h of each is stacked."""
    rng = np.random.default_rng(5)
    body = helper.make_graph(
        [n("Gather", ["x", "i"], ["xi"], axis=0), n("MatMul", ["h_in", "w"], ["hw"]),
         n("Add", ["hw", "xi"], ["a"]), n("Tanh", ["a"], ["h_out"]),
         n("Identity", ["c"], ["c_out"]), n("Identity", ["h_out"], ["h_scan"])],
        "body", [vi("i", I64, []), vi("c", B, []), vi("h_in", F, [2, 6])],
        [vi("c_out", B, []), vi("h_out", F, [2, 6]), vi("h_scan", F, [2, 6])])
    model = _model([n("Loop", ["four", "", "h0"], ["h", "hs"], body=body)],
                   [vi("x", F, [4, 2, 6]), vi("h0", F, [2, 6])],
                   [vi("h", F, [2, 6]), vi("hs", F, [4, 2, 6])],
                   [_init("four", np.array(4, np.int64)),
                    _init("w", (rng.standard_normal((6, 6)) * 0.5).astype(np.float32))])
    feeds = [{"x": rng.standard_normal((4, 2, 6)).astype(np.float32),
              "h0": rng.standard_normal((2, 6)).astype(np.float32)} for _ in range(2)]
    _check(daemon, tmp_path, model, feeds)


def test_scan_outputs_of_a_loop_the_body_ends_are_refused(daemon, tmp_path):
    body = helper.make_graph(
        [n("Add", ["k_in", "one"], ["k_out"]), n("Less", ["k_out", "lim"], ["go"]),
         n("Identity", ["k_out"], ["ks"])],
        "body", [vi("i", I64, []), vi("c", B, []), vi("k_in", I64, [])],
        [vi("go", B, []), vi("k_out", I64, []), vi("ks", I64, [])],
        [_init("one", np.array(1, np.int64))])
    model = _model([n("Loop", ["", "", "k0"], ["k", "ks_all"], body=body)],
                   [vi("lim", I64, [])], [vi("k", I64, []), vi("ks_all", I64, ["trips"])],
                   [_init("k0", np.array(0, np.int64))])
    path = _save(model, tmp_path, "refused.onnx")
    with cudaep.connect(daemon) as c, c.load(path) as s:
        with pytest.raises(cudaep.Error) as e:
            s.run({"lim": np.array(3, np.int64)})
    assert e.value.name == "EUNSUPPORTED"
    assert "op Loop" in e.value.detail, e.value.detail
    assert "a row per iteration" in e.value.detail, e.value.detail


# ------------------------------------------------------------------- Scan

def scan_rnn_model(rng, d=8, hdim=6):
    """h_t = tanh(x_t @ wx + h_{t-1} @ wh + b), the weights initializers
    of the model graph the body reads in place; every h_t stacked."""
    body = helper.make_graph(
        [n("MatMul", ["xt", "wx"], ["a"]), n("MatMul", ["h_in", "wh"], ["b_"]),
         n("Add", ["a", "b_"], ["c"]), n("Add", ["c", "bias"], ["d"]),
         n("Tanh", ["d"], ["h_out"]), n("Identity", ["h_out"], ["y"])],
        "body", [vi("h_in", F, [1, hdim]), vi("xt", F, [1, d])],
        [vi("h_out", F, [1, hdim]), vi("y", F, [1, hdim])])
    inits = [_init("wx", (rng.standard_normal((d, hdim)) * 0.3).astype(np.float32)),
             _init("wh", (rng.standard_normal((hdim, hdim)) * 0.3).astype(np.float32)),
             _init("bias", rng.standard_normal(hdim).astype(np.float32))]
    return _model([n("Scan", ["h0", "x"], ["h", "ys"], num_scan_inputs=1, body=body,
                     scan_input_axes=[1], scan_output_axes=[1])],
                  [vi("h0", F, [1, hdim]), vi("x", F, [1, 5, d])],
                  [vi("h", F, [1, hdim]), vi("ys", F, [1, 5, hdim])], inits)


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_a_scan_rnn_reading_the_model_weights(daemon, tmp_path, precision):
    rng = np.random.default_rng(6)
    model = scan_rnn_model(rng)
    feeds = [{"h0": rng.standard_normal((1, 6)).astype(np.float32),
              "x": rng.standard_normal((1, 5, 8)).astype(np.float32)} for _ in range(3)]
    _check(daemon, tmp_path, model, feeds, precision=precision)


def test_scan_backward_along_the_last_axis(daemon, tmp_path):
    body = helper.make_graph(
        [n("Add", ["s_in", "xt"], ["s_out"]), n("Mul", ["s_out", "xt"], ["y"])],
        "body", [vi("s_in", F, [3]), vi("xt", F, [3])], [vi("s_out", F, [3]), vi("y", F, [3])])
    model = _model([n("Scan", ["s0", "x"], ["s", "ys"], num_scan_inputs=1, body=body,
                     scan_input_axes=[-1], scan_input_directions=[1],
                     scan_output_axes=[-1], scan_output_directions=[1])],
                   [vi("s0", F, [3]), vi("x", F, [3, 7])], [vi("s", F, [3]), vi("ys", F, [3, 7])])
    rng = np.random.default_rng(7)
    feeds = [{"s0": rng.standard_normal(3).astype(np.float32),
              "x": rng.standard_normal((3, 7)).astype(np.float32)} for _ in range(2)]
    _check(daemon, tmp_path, model, feeds)
