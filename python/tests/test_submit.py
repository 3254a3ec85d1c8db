"""Runs in flight from Python: Session.submit() returns before the run has
computed, Pending.wait() gives its outputs, against onnxruntime on fresh
random inputs; arrays that live in a region are used without a copy; a
wait can time out and be repeated; a run's own failure is raised by its
own wait; threads submit and wait at once; and sessions loaded with
batching=True on several connections have their runs merged, each getting
its own outputs. On the host backend with queued streams (backend =
host-async), which answers before computing as a GPU does, and on the plain
host backend."""
import json
import os
import subprocess
import threading

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import cudaep

BUILD = os.environ.get("CUDAEP_BUILD_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")


def mlp(path, rng, width=64):
    """y = Relu(x W1) W2 with a symbolic batch; big enough to take time."""
    w1 = (rng.standard_normal((width, width)) / 8).astype(np.float32)
    w2 = (rng.standard_normal((width, 8)) / 8).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"]),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["y"])],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def gather(path):
    graph = helper.make_graph(
        [helper.make_node("Gather", ["x", "idx"], ["y"], axis=0)],
        "gather",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 4]),
         helper.make_tensor_value_info("idx", TensorProto.INT64, ["k"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["k", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, path)
    return path


@pytest.fixture(params=["async_daemon", "daemon"])
def any_daemon(request):
    return request.getfixturevalue(request.param)


def test_submitted_runs_match_onnxruntime(any_daemon, tmp_path):
    rng = np.random.default_rng()
    path = mlp(str(tmp_path / "mlp.onnx"), rng)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    with cudaep.connect(any_daemon) as c, c.load(path) as s:
        xs = [rng.standard_normal((b, 64)).astype(np.float32) for b in (3, 17, 3, 64, 1, 17)]
        pending = [s.submit({"x": x}) for x in xs]     # all in flight at once
        for x, p in zip(xs, pending):
            got = p.wait()
            np.testing.assert_allclose(got["y"], ref.run(None, {"x": x})[0],
                                       rtol=1e-4, atol=1e-5)
            assert p.done()


def test_region_arrays_are_used_in_place(any_daemon, tmp_path):
    rng = np.random.default_rng()
    path = mlp(str(tmp_path / "mlp.onnx"), rng)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    with cudaep.connect(any_daemon) as c, c.load(path) as s, c.region(1 << 16) as r:
        x = r.array(np.float32, (8, 64))
        y = r.array(np.float32, (8, 8), offset=x.nbytes)
        for _ in range(3):
            x[...] = rng.standard_normal((8, 64))
            y[...] = np.nan
            out = s.submit({"x": x}, outputs={"y": y}).wait()
            assert out["y"] is y, "the output array given is the one returned"
            np.testing.assert_allclose(y, ref.run(None, {"x": np.array(x)})[0],
                                       rtol=1e-4, atol=1e-5)
        with pytest.raises(ValueError):
            s.submit({"x": x}, outputs={"y": np.zeros((8, 8), np.float32)})


def test_a_wait_can_time_out_and_be_repeated(async_daemon, tmp_path):
    rng = np.random.default_rng()
    path = mlp(str(tmp_path / "mlp.onnx"), rng, width=256)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    with cudaep.connect(async_daemon) as c, c.load(path) as s:
        s.run({"x": np.zeros((512, 256), np.float32)})  # planned, warm
        timed_out = 0
        for _ in range(10):
            xs = [rng.standard_normal((512, 256)).astype(np.float32) for _ in range(8)]
            pending = [s.submit({"x": x}) for x in xs]
            try:
                pending[-1].wait(timeout=0)
            except cudaep.Error as e:
                assert e.name == "ETIMEDOUT"
                timed_out += 1
            for x, p in zip(xs, pending):
                np.testing.assert_allclose(p.wait()["y"], ref.run(None, {"x": x})[0],
                                           rtol=1e-4, atol=1e-4)
            if timed_out:
                break
        assert timed_out, "every run had completed before its first wait"


def test_a_failed_run_fails_its_own_wait(any_daemon, tmp_path):
    path = gather(str(tmp_path / "gather.onnx"))
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    with cudaep.connect(any_daemon) as c, c.load(path) as s:
        good = s.submit({"x": x, "idx": np.array([5, 0], np.int64)})
        bad = s.submit({"x": x, "idx": np.array([1, 6], np.int64)})
        after = s.submit({"x": x, "idx": np.array([2, -1], np.int64)})
        np.testing.assert_array_equal(good.wait()["y"], x[[5, 0]])
        with pytest.raises(cudaep.Error) as e:
            bad.wait()
        assert e.value.name == "EINVAL"
        assert "Gather" in e.value.detail and "6" in e.value.detail
        np.testing.assert_array_equal(after.wait()["y"], x[[2, -1]])


def test_threads_submit_and_wait_at_once(async_daemon, tmp_path):
    rng = np.random.default_rng()
    path = mlp(str(tmp_path / "mlp.onnx"), rng)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    errors = []
    with cudaep.connect(async_daemon) as c, c.load(path) as s:
        def worker(seed):
            local = np.random.default_rng(seed)
            try:
                for _ in range(20):
                    xs = [local.standard_normal((5, 64)).astype(np.float32) for _ in range(3)]
                    for x, p in [(x, s.submit({"x": x})) for x in xs]:
                        np.testing.assert_allclose(p.wait()["y"], ref.run(None, {"x": x})[0],
                                                   rtol=1e-4, atol=1e-5)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors


def test_batching_sessions_of_several_clients_are_merged(batch_daemon, tmp_path):
    rng = np.random.default_rng(3)
    path = mlp(str(tmp_path / "mlp.onnx"), rng)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    errors = []
    barrier = threading.Barrier(4)
    clients = [cudaep.connect(batch_daemon, name="batch%d" % i) for i in range(4)]
    sessions = [c.load(path, name="b%d" % i, batching=True) for i, c in enumerate(clients)]

    def worker(i):
        local = np.random.default_rng(i)
        try:
            for _ in range(10):
                x = local.standard_normal((1, 64)).astype(np.float32)
                barrier.wait()
                np.testing.assert_allclose(sessions[i].run({"x": x})["y"],
                                           ref.run(None, {"x": x})[0], rtol=1e-4, atol=1e-5)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
            barrier.abort()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    out = subprocess.run([os.path.join(BUILD, "bin", "cudaepctl"), "--socket", batch_daemon,
                          "--json", "sessions"], check=True, capture_output=True,
                         text=True).stdout
    listed = {e["name"]: e for e in json.loads(out)["sessions"]}
    # Four runs let go together fill a batch of 4, which goes at once; a
    # first run refused for its output room (the client then learns the
    # size) runs alone, and its retry is merged.
    for i in range(4):
        assert listed["b%d" % i]["batching"] is True
        assert listed["b%d" % i]["batched_runs"] == 10, listed["b%d" % i]
    metrics = subprocess.run([os.path.join(BUILD, "bin", "cudaepctl"), "--socket", batch_daemon,
                              "metrics"], check=True, capture_output=True,
                             text=True).stdout
    counters = dict(line.rsplit(" ", 1) for line in metrics.splitlines()
                    if line.startswith("cudaep_batch"))
    assert int(counters["cudaep_batch_runs_total"]) == 40
    assert int(counters["cudaep_batch_size_3_4_total"]) == 10
    for s, c in zip(sessions, clients):
        s.close()
        c.close()
