#!/usr/bin/env python3
"""Writes .npy files as seeds for fuzz_npy into the directory given.

Made at fuzz time by the numpy of the test virtualenv, so that the seeds
are exactly what numpy writes and no binary files are kept in the
repository: every dtype cudaep-run reads, a scalar, empty arrays, the most
dimensions, format versions 1.0, 2.0 and 3.0, and the arrays it refuses
(Fortran order, big-endian, structured, a dtype it has no name for).
"""
import io
import os
import sys

import numpy as np
from numpy.lib import format as npy


def save(out, name, a, version=(1, 0)):
    buf = io.BytesIO()
    npy.write_array(buf, a, version=version, allow_pickle=False)
    with open(os.path.join(out, name), "wb") as f:
        f.write(buf.getvalue())


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)

    for t in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32",
              "int64", "uint64", "float16", "float32", "float64"):
        save(out, t, (rng.standard_normal((2, 3)) * 4).astype(t))
    save(out, "scalar", np.float32(1.5).reshape(()))
    save(out, "empty", np.zeros((0,), np.float32))
    save(out, "empty_wide", np.zeros((3, 0, 5), np.int64))
    save(out, "rank8", np.arange(256, dtype=np.uint8).reshape((2,) * 8))
    save(out, "vector", np.arange(7, dtype=np.int32))
    save(out, "v2", np.ones((4, 4), np.float32), version=(2, 0))
    save(out, "v3", np.ones((1, 2), np.float64), version=(3, 0))
    save(out, "fortran", np.asfortranarray(np.ones((2, 3), np.float32)))
    save(out, "big_endian", np.ones((3,), ">f4"))
    save(out, "structured", np.zeros((2,), [("a", "<i4"), ("b", "<f4")]))
    save(out, "complex", np.ones((2,), np.complex64))


if __name__ == "__main__":
    main()
