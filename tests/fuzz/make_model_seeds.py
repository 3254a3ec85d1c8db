#!/usr/bin/env python3
"""Writes small ONNX models as seeds for fuzz_model into the directory given.

The seeds are made at fuzz time with the onnx package of the test
virtualenv, so no model files are kept in the repository: an MLP with a
symbolic batch, a Shape->Gather->Concat->Reshape chain, a transpose/concat
model, one with an external-data reference, and control flow: an If whose
branches read outer values, a Loop sliced by its iteration number with an
If in its body, and a Scan along its second axis backward.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def save(model, out, name):
    with open(os.path.join(out, name), "wb") as f:
        f.write(model.SerializeToString())


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    f = TensorProto.FLOAT

    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]),
         helper.make_node("Add", ["h", "b"], ["z"]),
         helper.make_node("Relu", ["z"], ["r"]),
         helper.make_node("Softmax", ["r"], ["y"], axis=-1)],
        "mlp", [helper.make_tensor_value_info("x", f, ["batch", 4])],
        [helper.make_tensor_value_info("y", f, ["batch", 3])], [w, b])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out, "mlp")

    idx = numpy_helper.from_array(np.array([0], np.int64), "i0")
    tail = numpy_helper.from_array(np.array([-1], np.int64), "tail")
    g = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "i0"], ["d0"], axis=0),
         helper.make_node("Concat", ["d0", "tail"], ["shape"], axis=0),
         helper.make_node("Reshape", ["x", "shape"], ["y"])],
        "chain", [helper.make_tensor_value_info("x", f, ["n", 2, 3])],
        [helper.make_tensor_value_info("y", f, ["n", 6])], [idx, tail])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out, "chain")

    g = helper.make_graph(
        [helper.make_node("Transpose", ["a"], ["t"], perm=[1, 0]),
         helper.make_node("Concat", ["t", "c"], ["y"], axis=0),
         helper.make_node("Cast", ["y"], ["z"], to=TensorProto.INT64)],
        "movement", [helper.make_tensor_value_info("a", f, [3, 2]),
                     helper.make_tensor_value_info("c", f, [1, 3])],
        [helper.make_tensor_value_info("z", TensorProto.INT64, [3, 3])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out, "movement")

    ext = TensorProto(name="e", data_type=f, dims=[2])
    ext.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", "8")):
        entry = ext.external_data.add()
        entry.key, entry.value = k, v
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "e"], ["y"])], "external",
        [helper.make_tensor_value_info("x", f, [2])],
        [helper.make_tensor_value_info("y", f, [2])], [ext])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out, "external")
    control_flow(out)
    return 0


def control_flow(out):
    f, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    n, vi = helper.make_node, helper.make_tensor_value_info
    then_g = helper.make_graph([n("Add", ["x", "x"], ["t"])], "then", [], [vi("t", f, [2])])
    else_g = helper.make_graph([n("Neg", ["x"], ["e"])], "else", [], [vi("e", f, [2])])
    g = helper.make_graph(
        [n("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)], "if",
        [vi("c", b, []), vi("x", f, [2])], [vi("y", f, [2])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out, "if")

    inner_then = helper.make_graph([n("Identity", ["sl"], ["it"])], "it", [], [vi("it", f, [1])])
    inner_else = helper.make_graph([n("Neg", ["sl"], ["ie"])], "ie", [], [vi("ie", f, [1])])
    body = helper.make_graph(
        [n("Identity", ["cond_in"], ["cond_out"]), n("Add", ["i", "one"], ["end"]),
         n("Unsqueeze", ["i", "axes"], ["s"]), n("Unsqueeze", ["end", "axes"], ["e"]),
         n("Slice", ["xs", "s", "e"], ["sl"]),
         n("If", ["cond_in"], ["pick"], then_branch=inner_then, else_branch=inner_else),
         n("Add", ["y_in", "pick"], ["y_out"]), n("Identity", ["y_out"], ["scan"])],
        "body", [vi("i", i64, []), vi("cond_in", b, []), vi("y_in", f, [1])],
        [vi("cond_out", b, []), vi("y_out", f, [1]), vi("scan", f, [1])],
        [numpy_helper.from_array(np.arange(4, dtype=np.float32), "xs"),
         numpy_helper.from_array(np.array(1, np.int64), "one"),
         numpy_helper.from_array(np.array([0], np.int64), "axes")])
    g = helper.make_graph(
        [n("Loop", ["m", "c", "y"], ["yf", "ys"], body=body)], "loop",
        [vi("m", i64, []), vi("c", b, []), vi("y", f, [1])],
        [vi("yf", f, [1]), vi("ys", f, ["k", 1])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out, "loop")

    body = helper.make_graph(
        [n("Add", ["s_in", "xt"], ["s_out"]), n("Mul", ["s_out", "xt"], ["y"])],
        "scan_body", [vi("s_in", f, [2]), vi("xt", f, [2])],
        [vi("s_out", f, [2]), vi("y", f, [2])])
    g = helper.make_graph(
        [n("Scan", ["s0", "x"], ["s", "ys"], num_scan_inputs=1, body=body,
           scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1])],
        "scan", [vi("s0", f, [2]), vi("x", f, [2, 3])],
        [vi("s", f, [2]), vi("ys", f, [2, 3])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)]), out, "scan")


if __name__ == "__main__":
    sys.exit(main())
