"""Clients that die in the middle of a run: the daemon finishes the work
it had started, releases everything the client held, and keeps serving
the others."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import cudaep

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("CUDAEP_BUILD_DIR") or os.path.join(HERE, "..", "..", "build")


def gauges(sock):
    out = subprocess.run([os.path.join(BUILD, "bin", "cudaepctl"), "--socket", sock, "--json",
                          "stats"], check=True, capture_output=True, text=True).stdout
    return {k: v["current"] for k, v in json.loads(out)["gauges"].items()}


def wait_gauges(sock, want, timeout=20):
    end = time.monotonic() + timeout
    while True:
        g = gauges(sock)
        if all(g[k] == v for k, v in want.items()) or time.monotonic() > end:
            return g
        time.sleep(0.05)


def slow_model(path):
    """A chain of 256x256 MatMuls: some milliseconds a run on the host."""
    rng = np.random.default_rng(0)
    inits, nodes, prev = [], [], "x"
    for i in range(12):
        w = (rng.standard_normal((256, 256)) / 16).astype(np.float32)
        inits.append(numpy_helper.from_array(w, "w%d" % i))
        nodes.append(helper.make_node("MatMul", [prev, "w%d" % i], ["h%d" % i]))
        prev = "h%d" % i
    nodes.append(helper.make_node("Relu", [prev], ["y"]))
    g = helper.make_graph(nodes, "slow",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 256])],
                          inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


CHILD = textwrap.dedent("""
    import sys, numpy as np
    sys.path.insert(0, %r)
    import cudaep
    c = cudaep.connect(sys.argv[1], name="victim")
    s = c.load(sys.argv[2])
    x = np.ones((256, 256), np.float32)
    s.run({"x": x})
    print("ready", flush=True)
    while True:
        s.run({"x": x})
""") % os.path.join(HERE, "..")


def test_client_killed_mid_run(daemon, tmp_path):
    model = str(tmp_path / "slow.onnx")
    slow_model(model)
    base = wait_gauges(daemon, {"connections": 0})
    for _ in range(3):
        child = subprocess.Popen([sys.executable, "-c", CHILD, daemon, model],
                                 stdout=subprocess.PIPE, text=True,
                                 env=dict(os.environ, CUDAEP_BUILD_DIR=BUILD))
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.05)  # let it get a run in flight
        child.send_signal(signal.SIGKILL)
        child.wait()
        g = wait_gauges(daemon, base)
        assert g == base, "gauges %s, baseline %s" % (g, base)
    # Everyone else is still served.
    with cudaep.connect(daemon) as c, c.load(model) as s:
        y = s.run({"x": np.zeros((2, 256), np.float32)})["y"]
        assert y.shape == (2, 256) and not y.any()
