#!/usr/bin/env python3
"""Writes small ONNX models as seeds for fuzz_model into the directory given.

The seeds are made at fuzz time with the onnx package of the test
virtualenv, so no model files are kept in the repository: an MLP with a
symbolic batch, a Shape->Gather->Concat->Reshape chain, a transpose/concat
model, and one with an external-data reference.
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
