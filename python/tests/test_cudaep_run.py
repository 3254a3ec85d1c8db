"""cudaep-run against a real cudaepd: inputs from .npy files and random ones,
symbolic dimensions, the printed shapes and checksums compared with numpy and
onnxruntime, --output files, --json, and the exit status of every failure."""
import json
import os
import re
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from numpy.lib import format as npy_format
from onnx import TensorProto, helper, numpy_helper

BUILD = os.environ.get("CUDAEP_BUILD_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
TOOL = os.path.join(BUILD, "bin", "cudaep-run")

RESULT = re.compile(r"^  (?P<name>[^:]+): (?P<dtype>\w+) \[(?P<shape>[^\]]*)\] "
                    r"sum=(?P<sum>\S+) abs_sum=(?P<abs>\S+)")


def mlp(path):
    """MatMul-Add-Relu-MatMul-Add-Softmax with a symbolic batch."""
    rng = np.random.default_rng(11)
    w1 = rng.standard_normal((16, 32)).astype(np.float32)
    b1 = rng.standard_normal(32).astype(np.float32)
    w2 = rng.standard_normal((32, 10)).astype(np.float32)
    b2 = rng.standard_normal(10).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"]),
        helper.make_node("Add", ["h1", "b1"], ["h2"]),
        helper.make_node("Relu", ["h2"], ["h3"]),
        helper.make_node("MatMul", ["h3", "w2"], ["h4"]),
        helper.make_node("Add", ["h4", "b2"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(b2, "b2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def mixed(path):
    """int64 ids into an embedding table, a bool mask, a float16 and a
    float32 input; outputs of float32, int64 and bool."""
    table = np.arange(80, dtype=np.float32).reshape(10, 8) / 10
    one = np.array(1.0, np.float32)
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["emb"]),
        helper.make_node("Cast", ["mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["ids"], ["idsf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["idsf", "maskf"], ["masked"]),
        helper.make_node("Add", ["ids", "ids"], ["twice"]),
        helper.make_node("Cast", ["ids"], ["nonzero"], to=TensorProto.BOOL),
        helper.make_node("Cast", ["h"], ["hf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["f", "one"], ["f1"]),
    ]
    graph = helper.make_graph(
        nodes, "mixed",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 4]),
         helper.make_tensor_value_info("mask", TensorProto.BOOL, ["batch", 4]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT16, ["batch", 3]),
         helper.make_tensor_value_info("f", TensorProto.FLOAT, [2, "width"])],
        [helper.make_tensor_value_info("emb", TensorProto.FLOAT, ["batch", 4, 8]),
         helper.make_tensor_value_info("masked", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("twice", TensorProto.INT64, ["batch", 4]),
         helper.make_tensor_value_info("nonzero", TensorProto.BOOL, ["batch", 4]),
         helper.make_tensor_value_info("hf", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("f1", TensorProto.FLOAT, [2, "width"])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(one, "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def run(*args):
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=60)


def ok(*args):
    p = run(*args)
    assert p.returncode == 0, p.stderr
    return p


def results(stdout):
    """{name: (dtype, shape, sum, abs_sum)} from the results section."""
    lines = stdout.splitlines()
    assert "results:" in lines, stdout
    out = {}
    for line in lines[lines.index("results:") + 1:]:
        m = RESULT.match(line)
        assert m, line
        shape = tuple(int(d) for d in m["shape"].split(", ") if d)
        out[m["name"]] = (m["dtype"], shape, float(m["sum"]), float(m["abs"]))
    return out


def assert_checksum(got, array, rtol=1e-5):
    a = np.asarray(array, dtype=np.float64)
    scale = max(np.abs(a).sum(), 1.0)
    assert got[2] == pytest.approx(a.sum(), abs=rtol * scale)
    assert got[3] == pytest.approx(np.abs(a).sum(), abs=rtol * scale)


def test_mlp_from_file_matches_onnxruntime(daemon, tmp_path):
    path = mlp(str(tmp_path / "mlp.onnx"))
    x = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    p = ok("--socket", daemon, path, "--input", "x=%s" % (tmp_path / "x.npy"), "--iters", "5")
    assert "  x: float32 [batch, 16] <- %s [3, 16]" % (tmp_path / "x.npy") in p.stdout
    assert "  probs: float32 [batch, 10]" in p.stdout
    assert re.search(r"^first run: [0-9.]+ (us|ms|s) ", p.stdout, re.M)
    m = re.search(r"^latency: min ([0-9.]+) (us|ms|s), p50 ([0-9.]+) (us|ms|s), "
                  r"p99 ([0-9.]+) (us|ms|s), mean ([0-9.]+) (us|ms|s) \(5 runs\)$",
                  p.stdout, re.M)
    assert m, p.stdout
    want = dict(zip(["probs", "logits"],
                    ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                    .run(None, {"x": x})))
    got = results(p.stdout)
    assert set(got) == {"probs", "logits"}
    for name, ref in want.items():
        assert got[name][:2] == ("float32", (3, 10))
        assert_checksum(got[name], ref)
    # Softmax rows sum to one: a check that needs no reference at all.
    assert got["probs"][2] == pytest.approx(3.0, abs=1e-5)


def test_output_file_holds_the_array(daemon, tmp_path):
    path = mlp(str(tmp_path / "mlp.onnx"))
    x = np.random.default_rng(2).standard_normal((4, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "logits.npy"
    p = ok("-s", daemon, path, "-i", "x=%s" % (tmp_path / "x.npy"), "-o", "logits=%s" % out,
           "--iters", "2", "--quiet")
    assert "inputs:" not in p.stdout and p.stderr == ""
    logits = np.load(out)
    assert logits.dtype == np.float32 and logits.shape == (4, 10)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(["logits"], {"x": x})[0]
    np.testing.assert_allclose(logits, ref, rtol=1e-4, atol=1e-5)
    got = results(p.stdout)["logits"]
    assert_checksum(got, logits, rtol=1e-9)
    assert "-> %s" % out in p.stdout


def test_int64_bool_float16_inputs_from_files(daemon, tmp_path):
    path = mixed(str(tmp_path / "mixed.onnx"))
    rng = np.random.default_rng(3)
    feeds = {
        "ids": rng.integers(0, 10, (2, 4)).astype(np.int64),
        "mask": rng.integers(0, 2, (2, 4)).astype(bool),
        "h": rng.standard_normal((2, 3)).astype(np.float16),
        "f": rng.standard_normal((2, 5)).astype(np.float32),
    }
    args = ["-s", daemon, path, "--iters", "3"]
    for name, a in feeds.items():
        np.save(tmp_path / (name + ".npy"), a)
        args += ["--input", "%s=%s" % (name, tmp_path / (name + ".npy"))]
    for name in ("twice", "nonzero", "emb"):
        args += ["--output", "%s=%s" % (name, tmp_path / ("out_" + name + ".npy"))]
    p = ok(*args)
    want = dict(zip([o.name for o in onnx.load(path).graph.output],
                    ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)))
    got = results(p.stdout)
    dtypes = {"emb": "float32", "masked": "float32", "twice": "int64", "nonzero": "bool",
              "hf": "float32", "f1": "float32"}
    for name, ref in want.items():
        assert got[name][:2] == (dtypes[name], ref.shape), name
        assert_checksum(got[name], ref)
    twice = np.load(tmp_path / "out_twice.npy")
    assert twice.dtype == np.int64
    np.testing.assert_array_equal(twice, feeds["ids"] * 2)
    nonzero = np.load(tmp_path / "out_nonzero.npy")
    assert nonzero.dtype == np.bool_
    np.testing.assert_array_equal(nonzero, feeds["ids"] != 0)
    np.testing.assert_array_equal(np.load(tmp_path / "out_emb.npy"), want["emb"])


def test_float64_and_the_other_integer_widths_from_files(daemon, tmp_path):
    """Each of float64, int16, uint16, uint32 and uint64 read from a .npy
    file, added to itself in the model and written back to one."""
    types = {"d": np.float64, "s": np.int16, "h": np.uint16, "w": np.uint32, "q": np.uint64}
    n = helper.make_node
    graph = helper.make_graph(
        [n("Add", [k, k], ["y" + k]) for k in types], "wide",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(np.dtype(t)), [2, 3])
         for k, t in types.items()],
        [helper.make_tensor_value_info("y" + k, helper.np_dtype_to_tensor_dtype(np.dtype(t)),
                                       [2, 3]) for k, t in types.items()])
    path = str(tmp_path / "wide.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)
    rng = np.random.default_rng(5)
    feeds = {"d": rng.standard_normal((2, 3)),
             "s": rng.integers(-20000, 20000, (2, 3)).astype(np.int16),
             "h": rng.integers(0, 65536, (2, 3)).astype(np.uint16),
             "w": rng.integers(0, 2 ** 32, (2, 3), dtype=np.uint64).astype(np.uint32),
             "q": rng.integers(0, 2 ** 63, (2, 3), dtype=np.uint64) * np.uint64(3)}
    args = ["-s", daemon, path, "--iters", "1"]
    for k, a in feeds.items():
        np.save(tmp_path / (k + ".npy"), a)
        args += ["--input", "%s=%s" % (k, tmp_path / (k + ".npy")),
                 "--output", "y%s=%s" % (k, tmp_path / ("y" + k + ".npy"))]
    p = ok(*args)
    got = results(p.stdout)
    for k, t in types.items():
        y = np.load(tmp_path / ("y" + k + ".npy"))
        assert y.dtype == np.dtype(t) and y.shape == (2, 3), k
        np.testing.assert_array_equal(y, feeds[k] + feeds[k])  # wrapping as numpy's
        assert got["y" + k][:2] == (np.dtype(t).name, (2, 3))
        assert_checksum(got["y" + k], y, rtol=1e-9)


def test_random_inputs_honour_dtypes_ranges_and_seed(daemon, tmp_path):
    path = mixed(str(tmp_path / "mixed.onnx"))
    outs = {n: tmp_path / (n + ".npy") for n in ("twice", "masked", "hf", "f1")}

    def go(seed):
        args = ["-s", daemon, path, "--dim", "batch=6", "--dim", "width=7",
                "--seed", str(seed), "--iters", "2"]
        for n, f in outs.items():
            args += ["-o", "%s=%s" % (n, f)]
        p = ok(*args)
        assert "not bound" not in p.stderr
        return p, {n: np.load(f) for n, f in outs.items()}

    p, a = go(5)
    assert "  ids: int64 [batch, 4] <- random [6, 4] (seed 5)" in p.stdout
    assert "  f: float32 [2, width] <- random [2, 7] (seed 5)" in p.stdout
    ids = a["twice"] // 2
    assert ids.shape == (6, 4) and ids.min() >= 0 and ids.max() < 10
    assert len(np.unique(ids)) > 1
    # masked = ids * mask: the mask holds both values.
    mask = a["masked"] != 0
    assert mask.any() and not mask[ids != 0].all()
    for n in ("hf", "f1"):
        assert a[n].min() >= -1 and a[n].max() < 1 and len(np.unique(a[n])) > 1
    assert a["f1"].shape == (2, 7) and a["hf"].shape == (6, 3)
    _, again = go(5)
    _, other = go(6)
    for n in outs:
        np.testing.assert_array_equal(a[n], again[n])
    assert not np.array_equal(a["f1"], other["f1"])


def test_bfloat16_is_random_only(daemon, tmp_path):
    """numpy has no bfloat16: such an input gets random values (exact in
    bfloat16, within [-1, 1)), and cannot come from or go to a .npy file."""
    nodes = [helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["b", "b"], ["b2"])]
    graph = helper.make_graph(
        nodes, "bf16",
        [helper.make_tensor_value_info("b", TensorProto.BFLOAT16, [64])],
        [helper.make_tensor_value_info("bf", TensorProto.FLOAT, [64]),
         helper.make_tensor_value_info("b2", TensorProto.BFLOAT16, [64])])
    path = str(tmp_path / "bf16.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    out = tmp_path / "bf.npy"
    p = ok("-s", daemon, path, "-o", "bf=%s" % out, "--iters", "1")
    bf = np.load(out)
    assert bf.min() >= -1 and bf.max() < 1 and len(np.unique(bf)) > 8
    assert (bf.view(np.uint32) & 0xffff == 0).all()  # came from bfloat16
    got = results(p.stdout)
    assert_checksum(got["bf"], bf, rtol=1e-9)
    assert got["b2"][:2] == ("bfloat16", (64,))
    assert_checksum(got["b2"], 2 * bf, rtol=1e-9)

    np.save(tmp_path / "b.npy", np.zeros(64, np.float32))
    p = run("-s", daemon, path, "-i", "b=%s" % (tmp_path / "b.npy"))
    assert p.returncode == 1 and "input 'b' is bfloat16, which numpy has no dtype for" in p.stderr
    p = run("-s", daemon, path, "-o", "b2=%s" % (tmp_path / "b2.npy"), "--iters", "1")
    assert p.returncode == 1 and "numpy has no dtype for bfloat16" in p.stderr


def test_unbound_symbol_defaults_to_one_and_says_so(daemon, tmp_path):
    path = mlp(str(tmp_path / "mlp.onnx"))
    p = ok("-s", daemon, path, "--iters", "1")
    assert "symbolic dimension 'batch' is not bound; using 1" in p.stderr
    assert results(p.stdout)["probs"][1] == (1, 10)
    p = ok("-s", daemon, path, "--iters", "1", "--dim", "batch=9")
    assert p.stderr == ""
    assert results(p.stdout)["probs"][1] == (9, 10)


def test_outputs_of_unknown_size_grow_the_region(daemon, tmp_path):
    """Concat of two symbolic lengths: the output's length is no symbol the
    tool can bind, so its room comes from cep_run's CEP_ENOSPC reply."""
    nodes = [helper.make_node("Concat", ["x", "y"], ["z"], axis=0)]
    graph = helper.make_graph(
        nodes, "concat",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", 4]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    path = str(tmp_path / "concat.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal((1000, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    p = ok("-s", daemon, path, "-i", "x=%s" % (tmp_path / "x.npy"), "-i", "y=%s" % (tmp_path / "y.npy"),
           "-o", "z=%s" % (tmp_path / "z.npy"), "--iters", "3")
    z = np.concatenate([x, y])
    np.testing.assert_array_equal(np.load(tmp_path / "z.npy"), z)
    got = results(p.stdout)["z"]
    assert got[:2] == ("float32", (1003, 4))
    assert_checksum(got, z, rtol=1e-9)


def test_npy_format_versions(daemon, tmp_path):
    path = mlp(str(tmp_path / "mlp.onnx"))
    x = np.random.default_rng(4).standard_normal((2, 16)).astype(np.float32)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(["logits"], {"x": x})[0]
    for version in ((1, 0), (2, 0), (3, 0)):
        f = tmp_path / ("x%d.npy" % version[0])
        with open(f, "wb") as fp:
            npy_format.write_array(fp, x, version=version)
        got = results(ok("-s", daemon, path, "-i", "x=%s" % f, "--iters", "1").stdout)
        assert_checksum(got["logits"], ref)


def test_json_summary(daemon, tmp_path):
    path = mlp(str(tmp_path / "mlp.onnx"))
    p = ok("-s", daemon, path, "--json", "--iters", "7", "--warmup", "2", "--dim", "batch=2",
           "--precision", "tf32")
    j = json.loads(p.stdout)
    assert j["model"] == path and j["socket"] == daemon and j["backend"] == "host"
    assert j["precision"] == "tf32" and j["iters"] == 7 and j["warmup"] == 2
    assert j["inputs"] == [{"name": "x", "dtype": "float32", "model_shape": ["batch", 16],
                            "shape": [2, 16], "file": None}]
    assert [o["name"] for o in j["outputs"]] == ["probs", "logits"]
    probs = j["outputs"][0]
    assert probs["shape"] == [2, 10] and probs["model_shape"] == ["batch", 10]
    assert probs["sum"] == pytest.approx(2.0, abs=1e-5)
    lat = j["latency_us"]
    assert 0 < lat["min"] <= lat["p50"] <= lat["p99"] <= lat["max"]
    assert lat["min"] <= lat["mean"] <= lat["max"] and j["first_run_us"] > 0


@pytest.mark.parametrize("make_args, message", [
    (lambda t, m: ["-i", "y=%s" % t["x"]], "has no input 'y'; its inputs are: x"),
    (lambda t, m: ["-o", "nope=%s" % t["out"]], "has no output 'nope'; its outputs are: probs, logits"),
    (lambda t, m: ["-d", "seq=4"], "no symbolic dimension 'seq'; its symbols are: batch"),
    (lambda t, m: ["-i", "x=%s" % t["x64"]], "input 'x' is float32, but %(x64)s holds float64"),
    (lambda t, m: ["-i", "x=%s" % t["narrow"]], "input 'x' has shape [batch, 16], but %(narrow)s holds shape [2, 15]"),
    (lambda t, m: ["-i", "x=%s" % t["x"], "-d", "batch=5"], "dimension 0 ('batch') is 2 in %(x)s, but batch=5 from --dim"),
    (lambda t, m: ["-i", "x=%s" % t["garbage"]], "%(garbage)s: not a .npy file"),
    (lambda t, m: ["-i", "x=%s" % t["short"]], "%(short)s: 124 bytes of data, but its header announces 128"),
    (lambda t, m: ["-i", "x=%s" % t["fortran"]], "Fortran order"),
    (lambda t, m: ["-i", "x=%s" % t["big"]], "big-endian"),
    (lambda t, m: ["-i", "x=%s" % t["missing"]], "cannot open %(missing)s"),
    (lambda t, m: ["-i", "x=%s" % t["x"], "-o", "probs=%s" % t["nodir"]], "cannot create %(nodir)s"),
])
def test_failures_exit_1_with_a_message(daemon, tmp_path, make_args, message):
    path = mlp(str(tmp_path / "mlp.onnx"))
    x = np.ones((2, 16), np.float32)
    files = {n: str(tmp_path / (n + ".npy")) for n in
             ("x", "x64", "narrow", "garbage", "short", "fortran", "big", "missing", "out")}
    files["nodir"] = str(tmp_path / "nodir" / "probs.npy")
    np.save(files["x"], x)
    np.save(files["x64"], x.astype(np.float64))
    np.save(files["narrow"], np.ones((2, 15), np.float32))
    np.save(files["fortran"], np.asfortranarray(np.ones((2, 16), np.float32)))
    np.save(files["big"], x.astype(">f4"))
    with open(files["garbage"], "wb") as f:
        f.write(b"this is not numpy at all")
    with open(files["x"], "rb") as f:
        whole = f.read()
    with open(files["short"], "wb") as f:
        f.write(whole[:-4])
    p = run("-s", daemon, path, "--iters", "1", *make_args(files, path))
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stderr.startswith("cudaep-run: ")
    assert message % files in p.stderr


def test_no_daemon_exits_1(tmp_path):
    sock = str(tmp_path / "nobody.sock")
    p = run("-s", sock, str(tmp_path / "m.onnx"))
    assert p.returncode == 1 and sock in p.stderr


def test_invalid_model_exits_1_with_the_daemons_message(daemon, tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    p = run("-s", daemon, str(bad))
    assert p.returncode == 1
    assert p.stderr.startswith("cudaep-run: cannot load %s: " % bad)
    assert len(p.stderr.split(": ", 2)[2].strip()) > 0


@pytest.mark.parametrize("args", [
    [],
    ["a.onnx", "b.onnx"],
    ["--iters", "0", "m.onnx"],
    ["--iters", "ten", "m.onnx"],
    ["--warmup", "0", "m.onnx"],
    ["--input", "x", "m.onnx"],
    ["--input", "=x.npy", "m.onnx"],
    ["--input", "x=a.npy", "--input", "x=b.npy", "m.onnx"],
    ["--dim", "batch", "m.onnx"],
    ["--dim", "batch=-1", "m.onnx"],
    ["--seed", "-3", "m.onnx"],
    ["--precision", "fp8", "m.onnx"],
    ["--bogus", "m.onnx"],
    ["--generate", "0", "m.onnx"],
    ["--temperature", "0.5", "m.onnx"],
    ["--generate", "4", "--prompt", "1,,2", "m.onnx"],
    ["--generate", "4", "--prompt", "-1", "m.onnx"],
    ["--generate", "4", "--prompt-len", "0", "m.onnx"],
    ["--generate", "4", "--temperature", "-1", "m.onnx"],
    ["--generate", "4", "--temperature", "1", "--top-p", "0", "m.onnx"],
    ["--generate", "4", "--temperature", "1", "--top-p", "1.5", "m.onnx"],
    ["--generate", "4", "--top-k", "5", "m.onnx"],
    ["--generate", "4", "--eos", "x", "m.onnx"],
    ["--generate", "4", "--input", "x=a.npy", "m.onnx"],
])
def test_usage_errors_exit_2(args):
    p = run(*args)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "cudaep-run --help" in p.stderr and p.stdout == ""


def test_help_and_version():
    p = run("--help")
    assert p.returncode == 0 and p.stdout.startswith("Usage: cudaep-run")
    for opt in ("--input", "--dim", "--iters", "--warmup", "--seed", "--output",
                "--precision", "--quiet", "--json", "--socket", "--generate", "--prompt",
                "--prompt-len", "--temperature", "--top-k", "--top-p", "--eos"):
        assert opt in p.stdout
    p = run("--version")
    assert p.returncode == 0 and re.fullmatch(r"cudaep-run \d+\.\d+\.\d+\n", p.stdout)


def test_cudaepctl_sessions_shows_the_engine_counters(daemon, tmp_path):
    """After three runs of one input shape: one plan, three cache hits (the
    first run learns its output sizes from a CEP_ENOSPC answer given after
    planning, and its retry finds the plan), and every run counted as
    eager (the host backend has no graphs)."""
    import cudaep
    path = mlp(str(tmp_path / "mlp.onnx"))
    x = np.random.default_rng().standard_normal((3, 16)).astype(np.float32)
    with cudaep.connect(daemon) as client:
        with client.load(path, name="counted") as s:
            for _ in range(3):
                s.run({"x": x})
            out = subprocess.run([os.path.join(BUILD, "bin", "cudaepctl"), "--socket",
                                  daemon, "--json", "sessions"],
                                 capture_output=True, text=True, timeout=30, check=True)
            rows = json.loads(out.stdout)["sessions"]
            row = [r for r in rows if r["name"] == "counted"][0]
            assert row["runs"] == 3
            assert row["plans"] == 1
            assert row["plan_hits"] == 3
            assert row["eager_runs"] == 3
            assert row["graph_replays"] == 0
            assert row["capture_failures"] == 0
            assert row["plan_bytes"] > 0
            text = subprocess.run([os.path.join(BUILD, "bin", "cudaepctl"), "--socket",
                                   daemon, "sessions"],
                                  capture_output=True, text=True, timeout=30, check=True)
            assert "REPLAYS" in text.stdout and "counted" in text.stdout


# ------------------------------------------------------------- --generate
# These need the daemon's generation (cep_generate_* in libcudaep-client):
# cudaep-run does not link without it.

def decoder(tmp_path, kind):
    from decoders import gpt2_like, llama_like
    b = {"gpt2": gpt2_like, "llama": llama_like}[kind]()
    path = tmp_path / ("%s.onnx" % kind)
    path.write_bytes(b)
    return str(path), b


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_generate_greedy_equals_the_reference(daemon, tmp_path, kind):
    from decoders import reference_greedy
    path, b = decoder(tmp_path, kind)
    j = json.loads(ok("-s", daemon, path, "--generate", "24", "--prompt", "1,7,3",
                      "--json").stdout)
    assert j["prompt"] == [1, 7, 3] and j["reason"] == "length"
    assert j["tokens"] == reference_greedy(b, [1, 7, 3], 24)
    assert j["daemon"]["tokens"] == 24 and j["daemon"]["prompt_tokens"] == 3
    assert j["time_to_first_token_us"] > 0
    assert 0 <= j["inter_token_us"]["p50"] <= j["inter_token_us"]["p99"]
    # The default prompt: tokens 1..16, or 1..L.
    j = json.loads(ok("-s", daemon, path, "-g", "8", "--json").stdout)
    assert j["prompt"] == list(range(1, 17))
    assert j["tokens"] == reference_greedy(b, list(range(1, 17)), 8)
    j = json.loads(ok("-s", daemon, path, "-g", "8", "--prompt-len", "5", "--json").stdout)
    assert j["tokens"] == reference_greedy(b, [1, 2, 3, 4, 5], 8)


def test_generate_text_eos_and_sampling(daemon, tmp_path):
    from decoders import reference_greedy
    path, b = decoder(tmp_path, "llama")
    ref = reference_greedy(b, [1, 7, 3], 24)
    p = ok("-s", daemon, path, "-g", "24", "--prompt", "1,7,3", "--eos", str(ref[4]))
    lines = p.stdout.splitlines()
    want = ref[:ref.index(ref[4]) + 1]
    assert "tokens: " + " ".join(map(str, want)) in lines
    assert "end: stop after %d tokens" % len(want) in lines
    for head in ("time to first token: ", "decode: ", "inter-token latency: p50 "):
        assert any(line.startswith(head) for line in lines), (head, p.stdout)
    sample = ["-s", daemon, path, "-g", "32", "--prompt", "1,7,3", "--json",
              "--temperature", "0.8", "--top-k", "10", "--top-p", "0.9"]
    a = json.loads(ok(*sample, "--seed", "5").stdout)["tokens"]
    assert a == json.loads(ok(*sample, "--seed", "5").stdout)["tokens"]
    others = [json.loads(ok(*sample, "--seed", str(k)).stdout)["tokens"] for k in (6, 7)]
    assert any(o != a for o in others)


def test_generate_failures_exit_1(daemon, tmp_path):
    path, _ = decoder(tmp_path, "gpt2")
    p = run("-s", daemon, path, "-g", "4", "--prompt", "1,99")
    assert p.returncode == 1 and p.stderr.startswith("cudaep-run: ") and "99" in p.stderr
    p = run("-s", daemon, mlp(str(tmp_path / "mlp.onnx")), "-g", "4")
    assert p.returncode == 1 and "cannot generate with" in p.stderr
