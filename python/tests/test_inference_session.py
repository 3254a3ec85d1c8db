"""cudaep.InferenceSession, onnxruntime's face over a session of a real
cudaepd: the inputs and outputs described as onnxruntime describes them
(compared with onnxruntime's own InferenceSession on the same model),
run() with every output, a subset in any order, repeats; the errors
onnxruntime users expect for a bad input name, a missing input, a bad
output name and a wrong dtype; the model's metadata; providers accepted
and ignored; models given as bytes; threads running one session."""
import pathlib
import threading

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import cudaep


def small(path=None):
    """x: float ["batch", 4, unknown]; m: int64 [3]; h: float16 ["batch"].
       y = Relu(x) + b          float ["batch", 4, None]
       s = ReduceSum(x, 2)      float ["batch", 4]
       n = Neg(m)               int64 [3]
       h2 = Mul(h, h)           float16 ["batch"]"""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    x.type.tensor_type.shape.dim.add()  # neither a value nor a dim_param
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    y.type.tensor_type.shape.dim.add()
    n = helper.make_node
    graph = helper.make_graph(
        [n("Relu", ["x"], ["r"]), n("Add", ["r", "b"], ["y"]),
         n("ReduceSum", ["x", "axes"], ["s"], keepdims=0),
         n("Neg", ["m"], ["n"]), n("Mul", ["h", "h"], ["h2"])],
        "small",
        [x, helper.make_tensor_value_info("m", TensorProto.INT64, [3]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT16, ["batch"])],
        [y, helper.make_tensor_value_info("s", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("n", TensorProto.INT64, [3]),
         helper.make_tensor_value_info("h2", TensorProto.FLOAT16, ["batch"])],
        [numpy_helper.from_array(np.float32(0.5), "b"),
         numpy_helper.from_array(np.array([2], np.int64), "axes")],
        doc_string="a graph to test the face")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="cudaep-tests", producer_version="1",
                              domain="test.cudaep", model_version=42,
                              doc_string="a model to test the face")
    helper.set_model_props(model, {"author": "tests", "purpose": "metadata"})
    onnx.checker.check_model(model)
    if path is not None:
        onnx.save(model, path)
    return model


def feed(rng, batch=2, k=3):
    return {"x": rng.standard_normal((batch, 4, k)).astype(np.float32),
            "m": np.array([1, -2, 3], np.int64),
            "h": rng.standard_normal(batch).astype(np.float16)}


def test_inputs_and_outputs_as_onnxruntime_gives_them(daemon, tmp_path):
    path = str(tmp_path / "small.onnx")
    small(path)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    with cudaep.InferenceSession(path, socket=daemon) as sess:
        ins, outs = sess.get_inputs(), sess.get_outputs()
        assert [i.name for i in ins] == ["x", "m", "h"]
        assert [o.name for o in outs] == ["y", "s", "n", "h2"]
        assert ins[0].shape == ["batch", 4, None]
        assert ins[0].type == "tensor(float)"
        assert [i.type for i in ins] == ["tensor(float)", "tensor(int64)", "tensor(float16)"]
        for mine, theirs in zip(ins + outs, ref.get_inputs() + ref.get_outputs()):
            assert (mine.name, mine.shape, mine.type) == (theirs.name, theirs.shape, theirs.type)
            assert repr(mine) == str(theirs)  # NodeArg(name=..., type=..., shape=...)


def test_run_all_outputs_subsets_and_repeats(daemon, tmp_path):
    rng = np.random.default_rng()
    path = str(tmp_path / "small.onnx")
    small(path)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    with cudaep.InferenceSession(path, socket=daemon) as sess:
        for batch, k in ((2, 3), (5, 1), (2, 3)):
            f = feed(rng, batch, k)
            want = dict(zip(["y", "s", "n", "h2"], ref.run(None, f)))
            for names in (None, [], ["y", "s", "n", "h2"], ["h2", "y"], ["n"], ("s", "s"),
                          ["y", "n", "y"]):
                got = sess.run(names, f)
                order = list(names) if names else ["y", "s", "n", "h2"]
                assert isinstance(got, list) and len(got) == len(order)
                for name, a in zip(order, got):
                    assert isinstance(a, np.ndarray)
                    assert a.dtype == want[name].dtype and a.shape == want[name].shape, name
                    np.testing.assert_allclose(a, want[name], rtol=1e-3, atol=1e-5)
        # Values that are not arrays yet are made arrays of the model's types.
        f = feed(rng)
        lists = {k: v.tolist() for k, v in f.items()}
        got = sess.run(None, lists)
        for a, b in zip(got, sess.run(None, f)):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
        # run_options are accepted and ignored.
        sess.run(["n"], f, run_options=cudaep.RunOptions())


def test_bad_names_and_types_raise_what_onnxruntime_users_catch(daemon, tmp_path):
    rng = np.random.default_rng()
    path = str(tmp_path / "small.onnx")
    small(path)
    with cudaep.InferenceSession(path, socket=daemon) as sess:
        f = feed(rng)
        with pytest.raises(cudaep.InvalidArgument) as e:
            sess.run(None, dict(f, z=f["x"]))
        assert isinstance(e.value, ValueError) and isinstance(e.value, cudaep.Error)
        assert "'z'" in str(e.value) and "input" in str(e.value)
        with pytest.raises(cudaep.InvalidArgument) as e:
            sess.run(None, {"x": f["x"], "h": f["h"]})
        assert "'m'" in str(e.value) and "missing" in str(e.value)
        with pytest.raises(ValueError) as e:
            sess.run(["y", "nope"], f)
        assert isinstance(e.value, cudaep.InvalidArgument)
        assert "'nope'" in str(e.value) and "output" in str(e.value)
        with pytest.raises(TypeError) as e:
            sess.run(None, dict(f, x=f["x"].astype(np.float64)))
        assert isinstance(e.value, cudaep.InvalidType) and isinstance(e.value, ValueError)
        assert e.value.name == "EDTYPE"
        assert "'x'" in str(e.value) and "float64" in str(e.value) and "float32" in str(e.value)
        with pytest.raises(cudaep.InvalidArgument) as e:
            sess.run(None, dict(f, x=f["x"][0]))
        assert e.value.name == "ESHAPE" and "'x'" in str(e.value)
        with pytest.raises(TypeError, match="output_names"):
            sess.run("y", f)
        with pytest.raises(TypeError, match="output_names"):
            sess.run([0], f)
        with pytest.raises(TypeError, match="feeds"):
            sess.run(None, [f["x"], f["m"], f["h"]])
        with pytest.raises(TypeError, match="input 'x'"):
            sess.run(None, dict(f, x="not an array"))
        # The session serves on.
        assert sess.run(["n"], f)[0].tolist() == [-1, 2, -3]


def test_model_metadata_matches_onnxruntime(daemon, tmp_path):
    path = str(tmp_path / "small.onnx")
    model = small(path)
    bare = helper.make_model(model.graph, opset_imports=[helper.make_opsetid("", 17)])
    fields = ("producer_name", "graph_name", "domain", "description", "graph_description",
              "version", "custom_metadata_map")
    for source in (path, bare.SerializeToString()):
        ref = ort.InferenceSession(source, providers=["CPUExecutionProvider"]).get_modelmeta()
        with cudaep.InferenceSession(source, socket=daemon) as sess:
            meta = sess.get_modelmeta()
            for k in fields:
                assert getattr(meta, k) == getattr(ref, k), k
    assert meta.version == 2 ** 63 - 1  # no model_version: onnxruntime's answer


def test_sources_providers_and_options(daemon, tmp_path):
    rng = np.random.default_rng()
    path = tmp_path / "small.onnx"
    model = small(str(path))
    f = feed(rng)
    with cudaep.connect(daemon) as c:
        want = cudaep.InferenceSession(str(path), client=c).run(None, f)
        for source in (path, pathlib.PurePath(str(path)), model.SerializeToString(),
                       bytearray(model.SerializeToString())):
            for providers in (None, ["CUDAExecutionProvider", "CPUExecutionProvider"],
                              [("CUDAExecutionProvider", {"device_id": 0}),
                               "CPUExecutionProvider"], cudaep.get_available_providers()):
                with cudaep.InferenceSession(source, cudaep.SessionOptions(), providers,
                                             client=c, precision="fp32") as sess:
                    assert sess.get_providers() == ["CPUExecutionProvider"]  # a host backend
                    assert sess.get_provider_options() == {"CPUExecutionProvider": {}}
                    assert sess.end_profiling() == ""
                    for a, b in zip(sess.run(None, f), want):
                        np.testing.assert_array_equal(a, b)
        # A session given a client leaves it open; the session is closed.
        sess = cudaep.InferenceSession(str(path), client=c, name="face")
        assert sess.client is c and sess.session.id > 0
        sess.close()
        sess.close()
        with pytest.raises(cudaep.ClosedError) as e:
            sess.run(None, f)
        assert isinstance(e.value, ValueError) and "closed" in str(e.value)
        c.ping()
    # A session of its own connection closes it.
    sess = cudaep.InferenceSession(str(path), socket=daemon, precision="fp16")
    client = sess.client
    assert len(sess.run(["y"], f)) == 1
    sess.close()
    with pytest.raises(cudaep.ClosedError):
        client.ping()


def test_bad_construction_is_refused_before_connecting(tmp_path):
    path = str(tmp_path / "small.onnx")
    small(path)
    nowhere = str(tmp_path / "nobody.sock")  # connecting would raise cudaep.Error
    with pytest.raises(ValueError) as e:
        cudaep.InferenceSession(path, socket=nowhere, precision="fp8")
    assert not isinstance(e.value, cudaep.Error)
    assert "precision" in str(e.value) and "'fp16'" in str(e.value)
    with pytest.raises(TypeError, match="path_or_bytes"):
        cudaep.InferenceSession(123, socket=nowhere)
    with pytest.raises(TypeError, match="threads"):
        cudaep.InferenceSession(path, socket=nowhere, threads=4)
    with pytest.raises(TypeError, match="providers"):
        cudaep.InferenceSession(path, socket=nowhere, providers="CUDAExecutionProvider")
    with pytest.raises(TypeError, match="providers"):
        cudaep.InferenceSession(path, socket=nowhere, providers=[3])
    with pytest.raises(TypeError, match="client"):
        cudaep.InferenceSession(path, client="me")
    with pytest.raises(cudaep.Error):  # all checked: it connects
        cudaep.InferenceSession(path, socket=nowhere, enable_fallback=0)


def test_missing_model_is_file_not_found(daemon, tmp_path):
    missing = str(tmp_path / "missing.onnx")
    with pytest.raises(FileNotFoundError) as e:
        cudaep.InferenceSession(missing, socket=daemon)
    assert isinstance(e.value, cudaep.NoSuchFile) and e.value.filename == missing
    with pytest.raises(cudaep.Error) as e:
        cudaep.InferenceSession(b"not a model at all", socket=daemon)
    assert e.value.name == "EMODEL"


def test_threads_run_one_session_at_once(async_daemon, tmp_path):
    path = str(tmp_path / "small.onnx")
    small(path)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    errors = []
    with cudaep.InferenceSession(path, socket=async_daemon) as sess:
        def worker(seed):
            rng = np.random.default_rng(seed)
            try:
                for _ in range(20):
                    f = feed(rng, int(rng.integers(1, 6)), int(rng.integers(1, 4)))
                    for a, b in zip(sess.run(["s", "y"], f), ref.run(["s", "y"], f)):
                        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
