"""The GPU machine's scripts (tests/gpu/zoo.py, bisect.py and cepgpu.py)
tested here on the host backend: their self-tests end to end, and their
parts (selection, error measures, the table, the bisector's graph surgery)
alone. What needs torch or a GPU skips visibly."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
GPU = os.path.join(HERE, "..", "..", "tests", "gpu")
BUILD = os.environ.get("CUDAEP_BUILD_DIR") or os.path.join(HERE, "..", "..", "build")
sys.path.append(GPU)  # last: the folder's bisect.py must not hide the standard one

import cepgpu  # noqa: E402
import zoo  # noqa: E402
import zoo_models  # noqa: E402

_spec = importlib.util.spec_from_file_location("cep_bisect", os.path.join(GPU, "bisect.py"))
cep_bisect = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cep_bisect)


def _script(name, *args, timeout=180):
    return subprocess.run([sys.executable, os.path.join(GPU, name), "--build", BUILD] +
                          list(args), capture_output=True, text=True, timeout=timeout)


def test_zoo_selftest(tmp_path):
    """The whole zoo machinery on the host: exports in subprocesses, cells
    through a daemon, every expected result (pass, a precision failure,
    NaN, an unknown op, failed and hung exports, a killed daemon, a cell
    timeout), the table and the JSON lines."""
    r = _script("zoo.py", "--selftest", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "selftest: ok" in r.stdout
    assert "==== zoo table" in r.stdout
    assert "crashed (signal SIGKILL) in st_crash/torchscript/fp16" in r.stdout
    lines = (tmp_path / "zoo.jsonl").read_text().splitlines()
    import json
    recs = [json.loads(l) for l in lines]
    cells = [c for c in recs if c["kind"] == "cell"]
    assert {c["model"] for c in cells} == set(zoo_models.GROUPS["selftest"])
    # The exported models are removed, the logs kept.
    left = [f for _, _, fs in os.walk(tmp_path / "exports") for f in fs]
    assert not [f for f in left if f.endswith((".onnx", ".npz"))], left
    assert "worker.log" in left


def test_zoo_budget_spent(tmp_path):
    """A budget spent before any cell: nothing runs, the table still comes
    and says what did not run."""
    r = _script("zoo.py", "--selftest", "--out", str(tmp_path), "--budget-s", "0")
    assert "not run (budget spent or stopped): st_mlp/torchscript" in r.stdout, r.stdout
    assert r.returncode == 1  # the self-test's expectations are not met, as it says


def test_bisect_selftest(tmp_path):
    r = _script("bisect.py", "--selftest", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "selftest: ok" in r.stdout
    assert "first jump (of 1 flagged):\nnode 3: Sub sub_k" in r.stdout


def test_bisect_refuses_bad_arguments(tmp_path):
    r = _script("bisect.py")
    assert r.returncode == 2 and "either MODEL.onnx or --zoo NAME" in r.stderr
    r = _script("bisect.py", "m.onnx", "--precision", "fp8")
    assert r.returncode == 2 and "unknown precision 'fp8'" in r.stderr
    r = _script("bisect.py", "m.onnx", "--chunk", "64")
    assert r.returncode == 2 and "--chunk must be from 1 to 63" in r.stderr


def test_zoo_lists_and_refuses():
    r = _script("zoo.py", "--list")
    assert r.returncode == 0 and "fp16bugs" in r.stdout and "mobilenet_v2" in r.stdout
    r = _script("zoo.py", "--models", "nosuch", "--out", "/nonexistent/x")
    assert r.returncode == 2 and "unknown model or group 'nosuch'" in r.stderr


# ------------------------------------------------------------- the zoo's parts


def test_zoo_entries():
    names = [s.name for s in zoo_models.SPECS]
    assert len(names) == len(set(names)) and len(names) >= 25
    for g, members in zoo_models.GROUPS.items():
        assert members and all(m in zoo_models.BY_NAME for m in members), g
    rng = np.random.default_rng(0)
    for s in zoo_models.SPECS:
        feeds = s.inputs(1, rng)
        assert feeds and all(isinstance(v, np.ndarray) for v in feeds.values()), s.name
        assert s.seed == zoo_models.Spec(s.name, "", "", None, None, []).seed
    text = zoo_models.BY_NAME["bert"].inputs(1, rng)
    assert text["input_ids"].shape == (2, zoo_models.SEQ)
    assert text["attention_mask"][1, -1] == 0 and text["attention_mask"][0].all()


def test_zoo_select():
    specs, plan = zoo.select("fp16bugs,resnet50", "torchscript,dynamo", None)
    assert [s.name for s in specs] == ["mobilenet_v2", "mobilenet_v3_small",
                                       "efficientnet_b0", "resnet50"]
    assert plan["resnet50"] == ["torchscript", "dynamo"]
    # +ortopt only where an onnxruntime model type is given.
    _, plan = zoo.select("bert,roberta", ",".join(zoo.EXPORTERS), None)
    assert plan["bert"] == list(zoo.EXPORTERS)
    assert plan["roberta"] == ["torchscript", "dynamo"]
    a = [s.name for s in zoo.select("all", "torchscript", "0/3")[0]]
    b = [s.name for s in zoo.select("all", "torchscript", "1/3")[0]]
    c = [s.name for s in zoo.select("all", "torchscript", "2/3")[0]]
    assert sorted(a + b + c) == sorted(zoo_models.GROUPS["all"]) and not set(a) & set(b)
    for bad, word in (("nosuch", "nosuch"), ("st_mlp", "--selftest")):
        with pytest.raises(ValueError, match=word):
            zoo.select(bad, "torchscript", None)
    with pytest.raises(ValueError, match="unknown exporter"):
        zoo.select("all", "jit", None)
    for shard in ("3/3", "x", "1/0"):
        with pytest.raises(ValueError, match="--shard"):
            zoo.select("all", "dynamo", shard)


def test_zoo_feeds_for():
    feeds = {"input_ids": np.zeros(2), "attention_mask": np.ones(2)}
    assert list(zoo.feeds_for(["input_ids", "attention_mask"], feeds)) == [
        "input_ids", "attention_mask"]
    # Renamed by an exporter: by position when the counts agree.
    out = zoo.feeds_for(["a", "b"], feeds)
    assert out["b"] is feeds["attention_mask"]
    # Dropped as unused: the rest by name.
    assert list(zoo.feeds_for(["input_ids"], feeds)) == ["input_ids"]
    with pytest.raises(KeyError, match="graph input 'c'"):
        zoo.feeds_for(["input_ids", "c", "d"], feeds)


def test_zoo_table():
    recs = [{"kind": "cell", "model": "m", "exporter": "torchscript", "precision": "fp32",
             "export_s": 1.0, "load_ms": 2.0, "first_ms": 3.0, "cudaep_ms": 0.5,
             "torch_ms": 0.6, "err": 1e-5, "l2": 1e-6, "result": "pass"},
            {"kind": "cell", "model": "m", "exporter": "dynamo", "precision": "*",
             "result": "export failed: boom"}]
    plan = {"m": ["torchscript", "dynamo"], "n": ["torchscript"]}
    t = zoo.table(recs, plan, ["fp32", "fp16"])
    assert "m/torchscript fp16; n/torchscript fp32,fp16" in t
    assert "export failed 1" in t and "pass 1" in t and "not run 2" in t
    row = [l for l in t.splitlines() if l.startswith("m ") and "pass" in l][0]
    assert "1.0e-05" in row and "0.500" in row


def test_compare():
    ref = [np.array([1.0, -2.0, 4.0], np.float32)]
    err, l2, problem = cepgpu.compare([np.array([1.0, -2.0, 4.4])], ref)
    assert problem is None and abs(err - 0.1) < 1e-6
    assert abs(l2 - 0.4 / np.sqrt(21)) < 1e-6
    _, _, problem = cepgpu.compare([np.array([1.0, np.nan, 4.0])], ref)
    assert problem == "NaN/inf in output 0"
    assert cepgpu.max_rel(np.array([np.inf]), np.array([1.0])) == float("inf")
    _, _, problem = cepgpu.compare([np.zeros(4)], ref)
    assert problem.startswith("output 0 has shape (4,)")
    _, _, problem = cepgpu.compare([], ref)
    assert problem == "0 outputs, the reference has 1"
    assert cepgpu.max_rel(np.zeros(3), np.zeros(3)) == 0.0
    assert cepgpu.max_rel(np.ones(3), np.zeros(3)) == float("inf")
    # Integer outputs compare as numbers.
    err, _, problem = cepgpu.compare([np.array([1, 2, 3])], [np.array([1, 2, 4])])
    assert problem is None and err == 0.25


def test_daemon_restart(tmp_path):
    d = cepgpu.Daemon(BUILD, str(tmp_path), "host").start()
    try:
        assert d.responsive()
        d.kill()
        assert not d.alive() and d.exit_status() == "signal SIGKILL"
        assert not d.responsive()
        d.restart()
        assert d.responsive() and d.starts == 2
    finally:
        assert d.stop() == "exit 0"


# ------------------------------------------------------------- the bisector's parts


def _chain():
    long_name = "x" * 150
    w = numpy_helper.from_array(np.eye(4, dtype=np.float32), "w")
    nodes = [helper.make_node("MatMul", ["in", "w"], ["a"], name="mm"),
             helper.make_node("Relu", ["a"], [long_name], name="relu"),
             helper.make_node("Split", [long_name], ["s0", "s1"], name="split", axis=1,
                              num_outputs=2),
             helper.make_node("Concat", ["s1", "s0"], ["cat"], name="cat", axis=1),
             helper.make_node("Constant", [], ["two"], name="two",
                              value=numpy_helper.from_array(np.float32(2.0))),
             helper.make_node("Mul", ["cat", "two"], ["out"], name="double")]
    g = helper.make_graph(nodes, "chain",
                          [helper.make_tensor_value_info("in", TensorProto.FLOAT, ["n", 4]),
                           helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                                         ["n", "s"])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["n", 4])],
                          [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), long_name


def test_bisect_graph_surgery():
    m, long_name = _chain()
    tensors = [t for _, t in cep_bisect.candidates(m, 1, [])]
    assert tensors == ["a", long_name, "s0", "s1", "cat", "out"]  # no Constant
    assert [t for _, t in cep_bisect.candidates(m, 1, ["split"])] == ["s0", "s1"]
    copy, alias = cep_bisect.with_outputs(m, tensors)
    assert len(alias[long_name]) <= cep_bisect.NAME_MAX and alias["a"] == "a"
    assert [o.name for o in copy.graph.output] == [alias[t] for t in tensors]
    assert len(m.graph.output) == 1  # the original is untouched
    feeds = cep_bisect.random_inputs(m, 3, {"s": 5}, 10, 0)
    assert feeds["in"].shape == (3, 4) and feeds["attention_mask"].shape == (3, 5)
    assert (feeds["attention_mask"] == 1).all()
    ref = cep_bisect.ort_run(copy, feeds)
    x = feeds["in"]
    assert np.allclose(ref[alias[long_name]], np.maximum(x, 0))


def test_bisect_flags_the_jump():
    m, long_name = _chain()
    ref = {"a": np.ones(4), long_name: np.ones(4), "s0": np.ones(2), "s1": np.ones(2),
           "cat": np.ones(4), "out": np.full(4, 2.0)}
    got = dict(ref, s1=np.array([1.0, 1.5]), cat=np.array([1.0, 1.5, 1.0, 1.0]),
               out=np.array([2.0, 3.0, 2.0, 2.0]))
    rows = cep_bisect.measure(m, ref, got, {"a": "chunk failed"})
    assert [r["name"] for r in rows] == ["mm", "relu", "split", "cat", "double"]
    assert rows[0]["err"] is None and rows[0]["outputs"][0][4] == "chunk failed"
    flagged = cep_bisect.flag(m, rows, "fp16", 2e-2, 10)
    # split's error (0.5) jumps from relu's 0; cat only carries it on.
    assert [r["name"] for r in flagged] == ["split"]
    assert rows[3]["err_in"] == 0.5


def test_randomize_scales_activations():
    torch = pytest.importorskip("torch", reason="torch is not installed: SKIP the "
                                "random-weights check (it runs where torch is)")
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8),
                            torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3), torch.nn.Flatten(),
                            torch.nn.Linear(8 * 8 * 8, 5))
    torch.nn.init.zeros_(m[5].weight)  # a zero head must not stay zero
    x = torch.randn(2, 3, 12, 12)
    top = cepgpu.randomize_(m, 1, (x,))
    with torch.no_grad():
        y = m.eval()(x)
    assert 0.3 < float(y.std()) < 3 and 0 < top < 1e3
    assert float(m[1].running_var.min()) > 0
