"""Bad arguments to the Python client's public functions raise the
exceptions Python code expects, with a message naming the argument: the
wrong Python type a TypeError, a value outside those a parameter takes a
ValueError (both before anything is sent), what the daemon refuses
cudaep.InvalidArgument (a ValueError) or cudaep.InvalidType (a TypeError
too), a missing model file cudaep.NoSuchFile (a FileNotFoundError), and a
closed client, session or region cudaep.ClosedError (a ValueError). The
connection serves on after each."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import cudaep


def mlp(path):
    w = np.arange(16 * 4, dtype=np.float32).reshape(16, 4) / 64
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"]),
         helper.make_node("Identity", ["h"], ["h_out"])],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, ["batch", 4])],
        [numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def raises(exc, call, *words, plain=False):
    """call() raises exc with every word in its message; plain: a builtin
    exception of the client's own checks, not a cudaep.Error."""
    with pytest.raises(exc) as e:
        call()
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    if plain:
        assert not isinstance(e.value, cudaep.Error), e.value
    return e.value


def test_connect_arguments(daemon, tmp_path):
    raises(TypeError, lambda: cudaep.connect(5), "socket", "int", plain=True)
    raises(TypeError, lambda: cudaep.connect(daemon, name=3), "name", "int", plain=True)
    raises(ValueError, lambda: cudaep.connect(daemon, name="a\0b"), "name", "NUL", plain=True)
    with cudaep.connect(tmp_path / ".." / tmp_path.name / "cudaep.sock") as c:  # a PathLike
        c.ping()


def test_load_arguments(daemon, tmp_path):
    path = mlp(str(tmp_path / "mlp.onnx"))
    with cudaep.connect(daemon) as c:
        raises(TypeError, lambda: c.load(123), "path", "int", plain=True)
        raises(TypeError, lambda: c.load(None), "path", plain=True)
        e = raises(ValueError, lambda: c.load(path, precision="fp8"),
                   "precision", "'fp8'", "'fp32'", "'tf32'", "'fp16'", "'bf16'", plain=True)
        raises(TypeError, lambda: c.load(path, precision=None), "precision", "'fp16'",
               plain=True)
        raises(TypeError, lambda: c.load(path, precision=2), "precision", plain=True)
        raises(ValueError, lambda: c.load(path, priority="urgent"),
               "priority", "'urgent'", "'normal'", "'high'", "'low'", plain=True)
        raises(ValueError, lambda: c.load(path, memory_limit=-1), "memory_limit", plain=True)
        raises(ValueError, lambda: c.load(path, memory_limit=2 ** 64), "memory_limit",
               plain=True)
        raises(TypeError, lambda: c.load(path, memory_limit=1.5), "memory_limit", "float",
               plain=True)
        raises(TypeError, lambda: c.load(path, batching="yes"), "batching", plain=True)
        raises(TypeError, lambda: c.load(path, name=7), "name", plain=True)
        e = raises(cudaep.InvalidArgument, lambda: c.load(path, name="n" * 64), "63")
        assert isinstance(e, ValueError) and e.name == "ENAMETOOLONG"
        missing = str(tmp_path / "missing.onnx")
        e = raises(FileNotFoundError, lambda: c.load(missing), missing)
        assert isinstance(e, cudaep.NoSuchFile) and e.name == "ENOENT"
        assert e.filename == missing and e.errno == 2
        e = raises(cudaep.InvalidArgument, lambda: c.load(str(tmp_path)), "directory")
        raises(TypeError, lambda: c.load_bytes(path), "model", "str", plain=True)
        # Right ones still load: numpy ints, 0/1 for bools.
        with c.load(path, precision="bf16", priority="low", memory_limit=np.int64(1 << 30),
                    batching=1, name="ok") as s:
            assert s.run({"x": np.ones((1, 16), np.float32)})["y"].shape == (1, 4)
        with c.load_bytes(open(path, "rb").read(), precision="fp16") as s:
            assert s.run({"x": np.ones((1, 16), np.float32)})["y"].shape == (1, 4)
        c.ping()


def test_region_arguments(daemon):
    with cudaep.connect(daemon) as c:
        raises(TypeError, lambda: c.region("4096"), "nbytes", "str", plain=True)
        raises(TypeError, lambda: c.region(4096.0), "nbytes", "float", plain=True)
        raises(ValueError, lambda: c.region(0), "nbytes", plain=True)
        raises(ValueError, lambda: c.region(-1), "nbytes", plain=True)
        with c.region(4096) as r:
            raises(TypeError, lambda: r.array("no such type", (4,)), "dtype", plain=True)
            raises(TypeError, lambda: r.array(object, (4,)), "dtype", plain=True)
            raises(TypeError, lambda: r.array(np.float32, "ab"), "shape", plain=True)
            raises(TypeError, lambda: r.array(np.float32, (2.5,)), "shape[0]", plain=True)
            raises(ValueError, lambda: r.array(np.float32, (2, -1)), "shape[1]", plain=True)
            raises(ValueError, lambda: r.array(np.float32, (2,), offset=-4), "offset",
                   plain=True)
            raises(TypeError, lambda: r.array(np.float32, (2,), offset="0"), "offset",
                   plain=True)
            raises(ValueError, lambda: r.array(np.float32, (1025,)), "outside", plain=True)
            assert r.array(np.float32, 8).shape == (8,)
        raises(cudaep.ClosedError, lambda: r.array(np.float32, (4,)), "closed")
        r.close()  # again: nothing
        c.ping()


def test_run_and_submit_arguments(daemon, tmp_path):
    path = mlp(str(tmp_path / "mlp.onnx"))
    x = np.ones((2, 16), np.float32)
    with cudaep.connect(daemon) as c, c.load(path) as s:
        for call in (s.run, s.submit):
            raises(TypeError, lambda: call([x]), "feeds", "list", plain=True)
            raises(TypeError, lambda: call({1: x}), "names", "int", plain=True)
            raises(TypeError, lambda: call({"x": None}), "input 'x'", plain=True)
            raises(TypeError, lambda: call({"x": "ones"}), "input 'x'", plain=True)
            raises(TypeError, lambda: call({"x": x.astype(np.complex64)}),
                   "input 'x'", "complex64", plain=True)
            raises(ValueError, lambda: call({"x": np.zeros((1,) * 9, np.float32)}),
                   "input 'x'", "rank 9", plain=True)
            raises(TypeError, lambda: call({"x": x}, output_names="y"), "output_names",
                   plain=True)
            e = raises(cudaep.InvalidArgument, lambda: call({"x": x, "q": x}), "'q'", "input")
            assert isinstance(e, ValueError) and e.name == "EINVAL"
            e = raises(cudaep.InvalidArgument, lambda: call({}), "'x'", "missing")
            e = raises(cudaep.InvalidArgument, lambda: call({"x": x}, output_names=["zz"]),
                       "'zz'", "output")
            e = raises(TypeError, lambda: call({"x": x.astype(np.int64)}), "'x'", "int64")
            assert isinstance(e, cudaep.InvalidType) and e.name == "EDTYPE"
            e = raises(cudaep.InvalidArgument, lambda: call({"x": np.ones((2, 15), np.float32)}),
                       "'x'", "dimension 1")
            assert e.name == "ESHAPE"
        raises(TypeError, lambda: s.run({"x": x}, copy="no"), "copy", plain=True)
        raises(TypeError, lambda: s.submit({"x": x}, outputs=[x]), "outputs", plain=True)
        raises(TypeError, lambda: s.submit({"x": x}, outputs={"y": [0.0] * 8}), "output 'y'",
               plain=True)
        raises(ValueError, lambda: s.submit({"x": x}, outputs={"y": np.zeros((2, 4), np.float32)}),
               "output 'y'", "region", plain=True)
        # Subsets of outputs; names once each.
        assert list(s.run({"x": x}, output_names=["h_out"])) == ["h_out"]
        assert list(s.run({"x": x}, output_names=["y", "h_out", "y"])) == ["y", "h_out"]
        assert list(s.submit({"x": x}, output_names=["y"]).wait()) == ["y"]
        # A big-endian array is the same numbers.
        np.testing.assert_array_equal(s.run({"x": x.astype(">f4")})["y"], s.run({"x": x})["y"])
        p = s.submit({"x": x})
        raises(TypeError, lambda: p.wait(timeout="1"), "timeout", plain=True)
        raises(TypeError, lambda: p.wait(timeout=True), "timeout", plain=True)
        raises(ValueError, lambda: p.wait(timeout=-1), "timeout", plain=True)
        raises(ValueError, lambda: p.wait(timeout=float("nan")), "timeout", plain=True)
        assert p.wait(timeout=10)["y"].shape == (2, 4)
        c.ping()


def test_closed_objects(daemon, tmp_path):
    path = mlp(str(tmp_path / "mlp.onnx"))
    x = np.ones((2, 16), np.float32)
    c = cudaep.connect(daemon)
    s = c.load(path, name="mlp")
    s.close()
    s.close()  # again: nothing
    for call in (lambda: s.run({"x": x}), lambda: s.submit({"x": x})):
        e = raises(cudaep.ClosedError, call, "session 'mlp' is closed")
        assert isinstance(e, ValueError)
    s = c.load(path)
    r = c.region(4096)
    p = s.submit({"x": x})
    p.wait()
    q = s.submit({"x": x})
    c.close()
    c.close()  # again: nothing
    for call in (c.ping, lambda: c.region(4096), lambda: c.load(path),
                 lambda: c.load_bytes(b"x"), lambda: s.run({"x": x}),
                 lambda: s.submit({"x": x}), lambda: r.array(np.float32, (4,)), q.wait, q.done):
        e = raises(cudaep.ClosedError, call, "closed")
        assert isinstance(e, ValueError)
    assert p.wait()["y"].shape == (2, 4)  # what had completed stays readable
    s.close()
    r.close()
