"""Models of ONNX's first opsets through the daemon (host backend).

Hand-made models at opsets 1 to 6 are checked against what their
operators meant then: a Caffe2-style CNN (BatchNormalization with is_test,
a bias added from axis 1 with broadcast=1, Gemm's broadcast, Softmax over
the matrix at axis 1) against the same network written at opset 13 and
run by onnxruntime; the reshaping and copying operators of opset 1
(Reshape's shape attribute, Split's sizes, Concat's default axis, Pad's
paddings, Tile's tiles and axis, Cast's type names, Upsample's two scales)
against numpy; the refusals (training mode, shapes the old broadcast does
not take) by their messages. Last, a conformance-style sweep: the ONNX
node cases that pass at their own opset, converted down to opsets 1 to 6
by onnx's version converter (which keeps their meaning), must give the
same outputs; the converter manages only some of them.
"""
import os
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper, version_converter

import cudaep

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "..", "..", "tests", "conformance", "expected_pass.txt")
F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits, opset, ir_version=3):
    """A model of the first IR versions, whose initializers are inputs too."""
    inputs = list(inputs) + [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                             for t in inits]
    graph = helper.make_graph(nodes, "old", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    onnx.checker.check_model(model)
    return model


def _save(model, tmp_path, name):
    path = str(tmp_path / name)
    onnx.save(model, path)
    return path


def _cnn(rng, opset):
    """Conv, BatchNormalization, a per-channel bias, Relu, MaxPool, global
    average, Flatten, Gemm and Softmax: the old form at opset (6 or 1)
    and the same network at opset 13."""
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    scale, b, mean = (rng.standard_normal(4).astype(np.float32) for _ in range(3))
    var = (np.abs(rng.standard_normal(4)) + 0.5).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    wfc = rng.standard_normal((10, 4)).astype(np.float32)
    cfc = rng.standard_normal(10).astype(np.float32)
    n = helper.make_node
    inits = [numpy_helper.from_array(v, k) for k, v in
             (("w", w), ("scale", scale), ("b", b), ("mean", mean), ("var", var),
              ("bias", bias), ("wfc", wfc), ("cfc", cfc))]
    extra = {"consumed_inputs": [0, 0]} if opset < 6 else {}
    old = [
        n("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c", "scale", "b", "mean", "var"], ["bn"], is_test=1,
          epsilon=1e-3, **extra),
        n("Add", ["bn", "bias"], ["a"], broadcast=1, axis=1),
        n("Relu", ["a"], ["r"]),
        n("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        n("GlobalAveragePool", ["p"], ["g"]),
        n("Flatten", ["g"], ["f"]),
        n("Gemm", ["f", "wfc", "cfc"], ["logits"], transB=1, broadcast=1),
        n("Softmax", ["logits"], ["y"]),
    ]
    new = list(old)
    new[1] = n("BatchNormalization", ["c", "scale", "b", "mean", "var"], ["bn"], epsilon=1e-3)
    new[2:3] = [n("Unsqueeze", ["bias", "axes"], ["bias3"]), n("Add", ["bn", "bias3"], ["a"])]
    new[-2] = n("Gemm", ["f", "wfc", "cfc"], ["logits"], transB=1)
    new[-1] = n("Softmax", ["logits"], ["y"], axis=1)
    x = [helper.make_tensor_value_info("x", F, [2, 3, 8, 8])]
    y = [helper.make_tensor_value_info("y", F, [2, 10])]
    axes = numpy_helper.from_array(np.array([1, 2], np.int64), "axes")
    return (_model(old, x, y, inits, opset),
            _model(new, x, y, inits + [axes], 13, ir_version=7))


@pytest.mark.parametrize("opset", [6, 1])
def test_caffe2_style_cnn_matches_its_opset13_twin(daemon, tmp_path, opset):
    rng = np.random.default_rng(opset)
    old, new = _cnn(rng, opset)
    ref = ort.InferenceSession(new.SerializeToString(), providers=["CPUExecutionProvider"])
    path = _save(old, tmp_path, "cnn%d.onnx" % opset)
    with cudaep.connect(daemon) as c, c.load(path) as s, c.load(path, precision="fp16") as h:
        for _ in range(2):
            x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
            want = ref.run(None, {"x": x})[0]
            np.testing.assert_allclose(s.run({"x": x})["y"], want, rtol=1e-4, atol=1e-6)
            got = h.run({"x": x})["y"]
            assert np.linalg.norm(got - want) <= 1e-2 * np.linalg.norm(want)


def test_axis_broadcast_is_not_fused_as_numpy(daemon, tmp_path):
    """MatMul by a constant and an Add of a constant bias make MatMulBias,
    a bias per column; an opset-6 Add from axis 0 adds one per row."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 4)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    n = helper.make_node
    for axis, want_fn in ((0, lambda m: m + bias[:, None]), (1, lambda m: m + bias)):
        nodes = [n("MatMul", ["x", "w"], ["m"]),
                 n("Add", ["m", "bias"], ["y"], broadcast=1, axis=axis)]
        model = _model(nodes, [helper.make_tensor_value_info("x", F, [4, 4])],
                       [helper.make_tensor_value_info("y", F, [4, 4])],
                       [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")], 6)
        path = _save(model, tmp_path, "mm%d.onnx" % axis)
        x = rng.standard_normal((4, 4)).astype(np.float32)
        with cudaep.connect(daemon) as c, c.load(path) as s:
            np.testing.assert_allclose(s.run({"x": x})["y"], want_fn(x @ w), rtol=1e-5, atol=1e-6)


def test_opset1_reshaping_operators(daemon, tmp_path):
    n = helper.make_node
    tiles = numpy_helper.from_array(np.array(2, np.float32), "tiles")
    axis = numpy_helper.from_array(np.array(1, np.float32), "axis")
    nodes = [
        n("Reshape", ["x"], ["r"], shape=[0, 3, -1]),             # (2, 3, 4)
        n("Transpose", ["r"], ["t"], perm=[0, 2, 1]),             # (2, 4, 3)
        n("Split", ["t"], ["s0", "s1"], axis=1, split=[1, 3]),    # (2,1,3), (2,3,3)
        n("Concat", ["s1", "s0"], ["c"]),                         # axis 1: (2, 4, 3)
        n("Pad", ["c"], ["p"], paddings=[0, 0, 1, 0, 1, 0], value=-1.0),  # (2, 5, 4)
        n("Tile", ["p", "tiles", "axis"], ["tl"]),                # (2, 10, 4)
        n("Cast", ["tl"], ["y"], to="INT32"),
        n("Upsample", ["x4"], ["u"], height_scale=2.0, width_scale=3.0),
    ]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [2, 12]),
                           helper.make_tensor_value_info("x4", F, [1, 2, 2, 2])],
                   [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 10, 4]),
                    helper.make_tensor_value_info("u", F, [1, 2, 4, 6])], [tiles, axis], 1)
    path = _save(model, tmp_path, "shape1.onnx")
    x = (np.arange(24, dtype=np.float32) * 1.5).reshape(2, 12)
    x4 = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    t = x.reshape(2, 3, 4).transpose(0, 2, 1)
    c = np.concatenate([t[:, 1:], t[:, :1]], axis=1)
    p = np.pad(c, ((0, 0), (0, 1), (1, 0)), constant_values=-1.0)
    want = np.tile(p, (1, 2, 1)).astype(np.int32)
    with cudaep.connect(daemon) as cl, cl.load(path) as s:
        got = s.run({"x": x, "x4": x4})
    np.testing.assert_array_equal(got["y"], want)
    np.testing.assert_array_equal(got["u"], x4.repeat(2, axis=2).repeat(3, axis=3))


def test_prelu_and_sum_of_opset6(daemon, tmp_path):
    n = helper.make_node
    slope = numpy_helper.from_array(np.array([0.5, -1.0, 2.0], np.float32), "slope")
    nodes = [n("PRelu", ["x", "slope"], ["p"]), n("Sum", ["p", "x", "p"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [2, 3, 2])],
                   [helper.make_tensor_value_info("y", F, [2, 3, 2])], [slope], 6)
    path = _save(model, tmp_path, "prelu6.onnx")
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(2, 3, 2)
    k = np.array([0.5, -1.0, 2.0], np.float32)[None, :, None]
    p = np.where(x < 0, x * k, x)
    with cudaep.connect(daemon) as c, c.load(path) as s:
        np.testing.assert_allclose(s.run({"x": x})["y"], 2 * p + x, rtol=1e-6)


def _refused(daemon, tmp_path, model, what):
    path = _save(model, tmp_path, "refused.onnx")
    with cudaep.connect(daemon) as c:
        with pytest.raises(cudaep.Error) as e:
            c.load(path)
    assert what in e.value.detail, e.value.detail
    return e.value


def test_refusals_name_the_node_and_why(daemon, tmp_path):
    n = helper.make_node
    x = [helper.make_tensor_value_info("x", F, [1, 2, 2, 2])]
    y = [helper.make_tensor_value_info("y", F, [1, 2, 2, 2])]
    c = numpy_helper.from_array(np.ones(2, np.float32), "c")
    bn = n("BatchNormalization", ["x", "c", "c", "c", "c"], ["y"], name="bn")
    e = _refused(daemon, tmp_path, _model([bn], x, y, [c], 6),
                 "node 0 'bn' (op BatchNormalization, domain ai.onnx, opset 6): "
                 "BatchNormalization (opset 6): is_test=0 asks for training mode")
    assert e.name == "EUNSUPPORTED"
    drop = n("Dropout", ["x"], ["y"], name="drop")
    _refused(daemon, tmp_path, _model([drop], x, y, [], 1),
             "Dropout (opset 1): is_test=0 asks for training mode with ratio 0.5")
    add = n("Add", ["x", "c"], ["y"], name="add")
    e = _refused(daemon, tmp_path, _model([add], x, y, [c], 6),
                 "Add (opset 6): B of shape [2] has another rank than (broadcast=0)")
    assert e.name == "ESHAPE"
    cast = n("Cast", ["x"], ["y"], to="COMPLEX64", name="cast")
    _refused(daemon, tmp_path, _model([cast], x, y, [], 1), "casting to type 14 is not supported")


# ------------------------------------------------------- converted node cases

def _expected_cases():
    with open(EXPECTED) as f:
        return {l.strip() for l in f if l.strip() and not l.startswith("#")}


def _converted_cases():
    """(name, opset, model, data sets) of each expected-to-pass node case
    that onnx's version converter brings down to an opset from 6 to 1 with
    operator versions other than at the opset above; checked models only."""
    from onnx import defs
    from onnx.backend.test.case.node import collect_testcases

    want = _expected_cases()

    def versions(model, opset):
        out = []
        for node in model.graph.node:
            try:
                out.append(defs.get_schema(node.op_type, opset, node.domain).since_version)
            except Exception:
                out.append(None)
        return out

    def keeps_meaning(model):
        # onnx's Softmax adapter from 13 to 12 keeps the axis, which before
        # 13 means the matrix from that axis on: right for the last axis
        # only (onnx/version_converter/adapters/softmax_13_12.h).
        dims = model.graph.input[0].type.tensor_type.shape.dim
        for node in model.graph.node:
            if node.op_type in ("Softmax", "LogSoftmax"):
                axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
                if axis % len(dims) != len(dims) - 1:
                    return False
        return True

    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in collect_testcases():
            if case.name not in want or case.model is None or not case.data_sets:
                continue
            opset = max(o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx"))
            prev = versions(case.model, opset)
            for target in range(min(opset - 1, 6), 0, -1):
                try:
                    model = version_converter.convert_version(case.model, target)
                    onnx.checker.check_model(model)
                except Exception:
                    break
                now = versions(model, target)
                if now != prev and keeps_meaning(model):
                    found.append((case.name, target, model, case.data_sets,
                                  case.rtol, case.atol))
                    prev = now
    return found


def test_node_cases_converted_to_old_opsets_still_pass(daemon, tmp_path):
    cases = _converted_cases()
    # The converter's reach at onnx 1.23: the activations, Conv and the
    # pools, the normalizations, Softmax and LogSoftmax, Dropout, PRelu.
    assert len(cases) >= 40, len(cases)
    failed = []
    with cudaep.connect(daemon) as c:
        for name, target, model, data_sets, rtol, atol in cases:
            path = _save(model, tmp_path, "%s_%d.onnx" % (name, target))
            try:
                with c.load(path) as s:
                    ins = [i.name for i in s.inputs]
                    outs = [o.name for o in s.outputs]
                    for inputs, outputs in data_sets:
                        got = s.run(dict(zip(ins, inputs)))
                        for k, w in zip(outs, outputs):
                            np.testing.assert_allclose(got[k], w, rtol=rtol, atol=atol)
            except (cudaep.Error, AssertionError) as e:
                failed.append("%s at opset %d: %s" % (name, target, str(e).splitlines()[0]))
    assert not failed, "\n".join(failed)
