#!/usr/bin/env python3
"""Writes the ONNX backend node test cases to a directory, at test time.

Each case comes from the installed onnx package's own generators
(onnx.backend.test.case.node.collect_testcases) and is written as

    OUT/<case>/model.onnx
    OUT/<case>/test_data_set_N/input_K.pb, output_K.pb
    OUT/<case>/tolerance.txt        "rtol atol"

Nothing generated here is committed; the conformance runner reads OUT.
"""
import argparse
import os
import sys
import warnings

import numpy as np


def write_tensor(path, value, name):
    from onnx import TensorProto, numpy_helper

    if isinstance(value, TensorProto):  # cases whose data numpy cannot hold
        t = TensorProto()
        t.CopyFrom(value)
        t.name = name
    elif isinstance(value, np.ndarray) or np.isscalar(value):
        t = numpy_helper.from_array(np.asarray(value), name)
    else:
        return False  # sequences, optionals, maps: not tensors
    with open(path, "wb") as f:
        f.write(t.SerializeToString())
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", help="output directory")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    args = ap.parse_args()

    warnings.simplefilter("ignore")
    from onnx.backend.test.case.node import collect_testcases

    os.makedirs(args.out, exist_ok=True)
    written = skipped = 0
    for case in collect_testcases():
        if args.filter and args.filter not in case.name:
            continue
        if case.model is None or not case.data_sets:
            skipped += 1
            continue
        d = os.path.join(args.out, case.name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        ok = True
        for n, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, "test_data_set_%d" % n)
            os.makedirs(ds, exist_ok=True)
            for k, v in enumerate(inputs):
                ok &= write_tensor(os.path.join(ds, "input_%d.pb" % k), v,
                                   case.model.graph.input[k].name)
            for k, v in enumerate(outputs):
                ok &= write_tensor(os.path.join(ds, "output_%d.pb" % k), v,
                                   case.model.graph.output[k].name)
        with open(os.path.join(d, "tolerance.txt"), "w") as f:
            f.write("%g %g\n" % (case.rtol, case.atol))
        if not ok:
            with open(os.path.join(d, "SKIP"), "w") as f:
                f.write("non-tensor inputs or outputs\n")
        written += 1
    print("gen_cases: %d cases written to %s, %d without data" % (written, args.out, skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
