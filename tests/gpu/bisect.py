#!/usr/bin/env python3
"""Which node of a model goes wrong in a cudaep session: every intermediate
tensor of the model's graph (or every k-th node's, or the ones named)
compared between a daemon session in a precision and onnxruntime CPU in
float32, on the same random inputs. Run on the GPU machine from the
repository root (tests/gpu/run.sh part bisect, with $BISECT_ARGS):

    python3 tests/gpu/bisect.py MODEL.onnx --precision fp16 [--batch 1,32]
    python3 tests/gpu/bisect.py --zoo mobilenet_v2 --precision fp16,bf16 --batch 1,32
    python3 tests/gpu/bisect.py --torchvision efficientnet_b0 --batch 32

and on any machine, on the host backend: bisect.py --selftest.

--zoo NAME (or --torchvision NAME) exports the zoo's model (tests/gpu/zoo_models.py:
random weights, its inputs) at each --batch with --exporter; a MODEL.onnx
gets random inputs: floats N(0,1), integers in [0, --int-high), inputs
named *mask* all ones; its dimension 0 takes --batch when symbolic, other
symbolic dimensions --dim NAME=V (else 1).

For each batch and precision it prints, per node in the graph's order:
index, op type, node name, output shape and dtype, and the output's error
(max |cudaep - onnxruntime| / max |onnxruntime|, the worst output of a
node with several); and flags ("<<") each node whose error passes
--threshold (default: tests/gpu/zoo.py's tolerance for the precision) and
--jump times the worst error of its inputs (or the precision's roundoff).
The first flagged node is printed in full: attributes, inputs with shape,
dtype and error (initializers by shape).

--budget-s (default 480) keeps a call inside the GPU machine's 600 s:
no new model, batch or precision starts after it; the summary says what
did not run. The daemon session outputs at most 64 tensors, so the tensors go in chunks
(--chunk) of model copies whose outputs are those tensors only (the nodes
after them are dead and dropped). Making a tensor an output keeps it from
being fused away, so a chunk can compute differently from the whole model;
--only NAME (a tensor or node name, repeatable) measures just that, which
disturbs the fusions least; the whole model's own outputs are compared in
a last pass as it is.
"""
import os
import sys

# This folder holds a bisect.py, which must not stand for the standard
# library's bisect (random and tempfile import it): the folder goes last
# on the path rather than first, where Python puts a script's folder.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE] + [HERE]

import argparse  # noqa: E402
import collections  # noqa: E402
import importlib.util  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.append(os.path.join(HERE, "..", "..", "python"))
import cepgpu  # noqa: E402

T0 = time.monotonic()
NAME_MAX = 120  # cudaep's tensor names hold 127 bytes; longer ones get an alias


def log(*a):
    print(" ".join(str(x) for x in a), file=sys.stderr, flush=True)


# ------------------------------------------------------------- the model


def zoo_export(name, exporter, batch, root, timeout):
    """Exports the zoo's entry name at batch through zoo.py's export worker
    (random weights, the zoo's inputs). Returns (model path, {input: array})."""
    d = os.path.join(root, "%s-b%d" % (name, batch))
    os.makedirs(d, exist_ok=True)
    logp = os.path.join(d, "worker.log")
    with open(logp, "wb") as logf:
        r = subprocess.run([sys.executable, os.path.join(HERE, "zoo.py"), "--export-worker",
                            name, "--dir", d, "--exporters", exporter, "--batch", str(batch),
                            "--threads", "8"], stdout=logf, stderr=logf, timeout=timeout,
                           env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    import json
    import zoo
    try:
        with open(os.path.join(d, exporter + ".json")) as f:
            rec = json.load(f)
    except OSError:
        raise RuntimeError("export of %s failed (exit %d): %s" % (
            name, r.returncode, zoo._last_line(logp)))
    if not rec.get("ok"):
        raise RuntimeError("export of %s failed: %s" % (name, rec.get("error")))
    return os.path.join(d, exporter + ".onnx"), zoo.load_inputs(d)


def random_inputs(model, batch, dims, int_high, seed):
    """Random feeds for model's graph inputs (see the module's text)."""
    from onnx import helper
    rng = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    feeds = collections.OrderedDict()
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = []
        for k, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            elif d.dim_param in dims:
                shape.append(dims[d.dim_param])
            else:
                shape.append(batch if k == 0 else 1)
        dt = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
        if "mask" in vi.name.lower():
            v = np.ones(shape, dt)
        elif dt.kind == "f":
            v = rng.standard_normal(shape).astype(dt)
        elif dt.kind == "b":
            v = rng.integers(0, 2, shape).astype(bool)
        else:
            v = rng.integers(0, int_high, shape).astype(dt)
        feeds[vi.name] = v
    return feeds


def candidates(model, every, only):
    """[(node index, tensor name)] of the top-level nodes' outputs to
    measure (Constants' aside), in the graph's order: all, every k-th
    node's, or those named by only (tensor or node names). Raises ValueError for a name in only
    that is neither."""
    nodes = model.graph.node
    # Constant nodes' outputs cannot go wrong and would take a third of a
    # CNN's places in the chunks.
    outs = [(i, o) for i, n in enumerate(nodes) if n.op_type != "Constant"
            for o in n.output if o]
    if only:
        names = set(only)
        pick = [(i, o) for i, o in outs if o in names or nodes[i].name in names]
        found = {o for _, o in pick} | {nodes[i].name for i, _ in pick}
        missing = [n for n in only if n not in found]
        if missing:
            raise ValueError("no tensor or node named %s" % ", ".join(missing))
        return pick
    if every > 1:
        last = len(nodes) - 1
        return [(i, o) for i, o in outs if i % every == every - 1 or i == last]
    return outs


def with_outputs(model, tensors):
    """A copy of model whose graph outputs are exactly tensors (names of
    existing tensors), each under an alias of at most NAME_MAX bytes
    (an Identity) where its own name is longer. Returns (copy, {tensor:
    output name})."""
    import onnx
    from onnx import helper
    m = onnx.ModelProto()
    m.CopyFrom(model)
    typed = {o.name: o for o in model.graph.output}
    del m.graph.output[:]
    alias = {}
    for k, t in enumerate(tensors):
        name = t
        if len(t.encode()) > NAME_MAX:
            name = "bisect_%d" % k
            m.graph.node.append(helper.make_node("Identity", [t], [name],
                                                 name="bisect_alias_%d" % k))
        alias[t] = name
        if t in typed and name == t:
            m.graph.output.append(typed[t])
        else:
            m.graph.output.append(onnx.ValueInfoProto(name=name))
    return m, alias


# ------------------------------------------------------------- running


def ort_run(model, feeds):
    """{tensor: array} of every graph output of model on onnxruntime CPU,
    graph optimizations off (each tensor as the graph defines it)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(names, {k: v for k, v in feeds.items()
                                         if k in {i.name for i in s.get_inputs()}})))


def call(fn, timeout):
    """fn() in a thread, so that a daemon that never answers cannot hold
    the script past timeout seconds: returns (value, None) or (None,
    error text)."""
    box = {}

    def body():
        try:
            box["v"] = fn()
        except Exception as e:  # the daemon's refusal is a result
            box["e"] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0]
                                   if str(e).strip() else "")

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        return None, "no answer in %g s" % timeout
    return box.get("v"), box.get("e")


def cudaep_chunk(daemon, model, feeds, precision, timeout):
    """({output name: array}, None) from one session of model in precision,
    or (None, why)."""
    import cudaep
    blob = model.SerializeToString()

    def go():
        with cudaep.connect(daemon.sock, name="bisect") as c:
            s = c.load_bytes(blob, name="bisect", precision=precision)
            want = {i.name for i in s.inputs}
            return s.run({k: v for k, v in feeds.items() if k in want})

    out, err = call(go, timeout)
    if not daemon.alive():
        err = "daemon crashed (%s)%s" % (daemon.exit_status(), (": " + daemon.last_error())
                                         if daemon.last_error() else "")
        daemon.restart()
    elif err and err.startswith("no answer"):
        daemon.restart()
    return out, err


# ------------------------------------------------------------- analysis


def measure(model, ref, got, failed):
    """Per node (graph order) a dict: index, op, name, outputs [(tensor,
    shape, dtype, err or None, note)] and err (worst output's)."""
    rows = []
    for i, n in enumerate(model.graph.node):
        outs = []
        for o in n.output:
            if not o or o not in ref:
                continue
            r = ref[o]
            shape, dt = tuple(np.shape(r)), str(np.asarray(r).dtype)
            if o in failed:
                outs.append((o, shape, dt, None, failed[o]))
            elif o in got:
                g = got[o]
                if np.shape(g) != np.shape(r):
                    outs.append((o, shape, dt, float("inf"), "shape %s" % (np.shape(g),)))
                else:
                    outs.append((o, shape, dt, cepgpu.max_rel(g, r), ""))
        if outs:
            errs = [e for _, _, _, e, _ in outs if e is not None]
            rows.append({"index": i, "op": n.op_type, "name": n.name or "(node %d)" % i,
                         "outputs": outs, "err": max(errs) if errs else None})
    return rows


def flag(model, rows, precision, threshold, jump):
    """Marks rows["flag"] where the error jumps (see the module's text);
    returns the flagged rows in order."""
    err_of = {}
    for r in rows:
        for o, _, _, e, _ in r["outputs"]:
            if e is not None:
                err_of[o] = e
    floor = cepgpu.ROUNDOFF[precision]
    flagged = []
    for r in rows:
        n = model.graph.node[r["index"]]
        ins = [err_of[t] for t in n.input if t in err_of]
        r["err_in"] = max(ins) if ins else 0.0
        e = r["err"]
        r["flag"] = e is not None and e > threshold and e > jump * max(r["err_in"], floor)
        if r["flag"]:
            flagged.append(r)
    return flagged


def _attr(a):
    from onnx import helper
    v = helper.get_attribute_value(a)
    if hasattr(v, "dims"):  # a TensorProto
        return "tensor%s" % (list(v.dims),)
    if hasattr(v, "node"):  # a graph
        return "graph(%d nodes)" % len(v.node)
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    return v


def describe(model, r, ref, err_of):
    n = model.graph.node[r["index"]]
    inits = {i.name: i for i in model.graph.initializer}
    lines = ["node %d: %s %s%s" % (r["index"], n.op_type, r["name"],
                                   (" (domain %s)" % n.domain) if n.domain else "")]
    for a in n.attribute:
        lines.append("  attribute %s = %s" % (a.name, _attr(a)))
    for t in n.input:
        if not t:
            lines.append("  input (none)")
        elif t in inits:
            lines.append("  input %s: initializer %s %s" % (
                t, list(inits[t].dims), _dtype_name(inits[t].data_type)))
        elif t in ref:
            v = np.asarray(ref[t])
            e = err_of.get(t)
            lines.append("  input %s: %s %s, error %s" % (t, list(v.shape), v.dtype,
                                                          "%.2e" % e if e is not None else "-"))
        else:
            lines.append("  input %s: (not measured)" % t)
    for o, shape, dt, e, note in r["outputs"]:
        lines.append("  output %s: %s %s, error %s%s" % (
            o, list(shape), dt, "%.2e" % e if e is not None else "-",
            (" (%s)" % note) if note else ""))
    return "\n".join(lines)


def _dtype_name(code):
    from onnx import helper
    try:
        return str(np.dtype(helper.tensor_dtype_to_np_dtype(code)))
    except Exception:  # bfloat16 and others numpy does not name
        return "type %d" % code


# ------------------------------------------------------------- one pass


def bisect(model, feeds, precision, daemon, a, title):
    """Measures and prints one model, feeds and precision; returns (rows,
    flagged, a summary line)."""
    tensors = candidates(model, a.every, a.only)
    if not tensors:
        raise ValueError("the graph has no node outputs to measure")
    log("%s: %d tensors, onnxruntime reference ..." % (title, len(tensors)))
    names = list(collections.OrderedDict.fromkeys(t for _, t in tensors))
    full, alias = with_outputs(model, names)
    by_alias = ort_run(full, feeds)
    ref = {t: by_alias[alias[t]] for t in names if alias[t] in by_alias}
    got, failed = {}, {}
    chunks = [names[k:k + a.chunk] for k in range(0, len(names), a.chunk)]
    for k, chunk in enumerate(chunks):
        m, alias = with_outputs(model, chunk)
        t = time.monotonic()
        out, err = cudaep_chunk(daemon, m, feeds, precision, a.timeout)
        log("  chunk %d/%d (%d tensors, from node output %s): %s in %.1f s" % (
            k + 1, len(chunks), len(chunk), chunk[0], err or "ok", time.monotonic() - t))
        for tname in chunk:
            if out is None:
                failed[tname] = err
            elif alias[tname] in out:
                got[tname] = out[alias[tname]]
            else:
                failed[tname] = "not among the session's outputs"
    # The model as it is: its own outputs, fusions undisturbed.
    own = [o.name for o in model.graph.output]
    out, err = cudaep_chunk(daemon, model, feeds, precision, a.timeout)
    whole = []
    for o in own:
        r = ref.get(o)
        if r is None:
            r = ort_run(model, feeds).get(o)
        if out is None or o not in out:
            whole.append("  %s: %s" % (o, err or "missing"))
        else:
            whole.append("  %s: error %.2e (relative L2 %.2e)" % (
                o, cepgpu.max_rel(out[o], r), cepgpu.rel_l2(out[o], r)))
    rows = measure(model, ref, got, failed)
    flagged = flag(model, rows, precision, a.threshold or cepgpu.TOL[precision], a.jump)
    print_report(model, rows, flagged, ref, title, whole, a, precision)
    line = "%s: outputs %s; " % (title, ", ".join(w.strip() for w in whole))
    if flagged:
        r = flagged[0]
        line += "first jump: node %d %s '%s' error %.2e (inputs %.2e), %d flagged" % (
            r["index"], r["op"], r["name"], r["err"], r["err_in"], len(flagged))
    else:
        line += "no jump"
    return rows, flagged, line


def print_report(model, rows, flagged, ref, title, whole, a, precision):
    print("==== bisect %s" % title)
    print("%5s  %-22s %-44s %-22s %-8s %9s %9s" % ("node", "op", "name", "shape", "dtype",
                                                  "error", "inputs"))
    err_of = {}
    for r in rows:
        for o, shape, dt, e, note in r["outputs"]:
            if e is not None:
                err_of[o] = e
            print("%5d  %-22s %-44s %-22s %-8s %9s %9s%s%s" % (
                r["index"], r["op"][:22], r["name"][-44:], str(list(shape))[:22], dt[:8],
                "%.2e" % e if e is not None else "-", "%.2e" % r["err_in"],
                "  <<" if r["flag"] and o == r["outputs"][0][0] else "",
                ("  " + note[:100]) if note else ""))
    print("the model's own outputs, as loaded whole:")
    print("\n".join(whole))
    if not flagged:
        print("no node's error jumps past %.0e and %gx its inputs'" % (
            a.threshold or cepgpu.TOL[precision], a.jump))
        return
    print("first jump (of %d flagged):" % len(flagged))
    print(describe(model, flagged[0], ref, err_of))
    if len(flagged) > 1:
        print("also flagged: " + "; ".join("%d %s %s %.1e" % (
            r["index"], r["op"], r["name"], r["err"]) for r in flagged[1:12]))


# ------------------------------------------------------------- main


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", help="an ONNX file")
    ap.add_argument("--zoo", metavar="NAME", help="export the zoo's model NAME (a comma list: "
                    "each in turn; needs torch)")
    ap.add_argument("--torchvision", metavar="NAME", help="the same as --zoo NAME")
    ap.add_argument("--exporter", default="torchscript", help="with --zoo: torchscript or dynamo")
    ap.add_argument("--precision", default="fp16", help="comma list: fp32, fp16, bf16")
    ap.add_argument("--batch", default="1", help="comma list of batches")
    ap.add_argument("--dim", action="append", default=[], metavar="NAME=V")
    ap.add_argument("--every", type=int, default=1, help="only every k-th node's outputs")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="only this tensor or node (repeatable)")
    ap.add_argument("--chunk", type=int, default=60, help="tensors per session (at most 63)")
    ap.add_argument("--threshold", type=float, default=None)
    ap.add_argument("--jump", type=float, default=10.0)
    ap.add_argument("--int-high", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=120, help="seconds per session")
    ap.add_argument("--budget-s", type=float, default=480,
                    help="no new model, batch and precision starts after this many seconds")
    ap.add_argument("--export-timeout", type=float, default=300)
    ap.add_argument("--build", default=os.environ.get("CUDAEP_BUILD_DIR", "build"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--selftest", action="store_true",
                    help="check the bisector on the host backend with a small graph")
    a = ap.parse_args(argv)
    a.zoo = a.zoo or a.torchvision
    if not a.selftest and bool(a.model) == bool(a.zoo):
        ap.error("give either MODEL.onnx or --zoo NAME")
    if not 1 <= a.chunk <= 63:
        ap.error("--chunk must be from 1 to 63")
    try:
        a.batches = [int(b) for b in a.batch.split(",")]
        a.dims = dict((k, int(v)) for k, v in (d.split("=", 1) for d in a.dim))
    except ValueError:
        ap.error("--batch wants integers and --dim NAME=INTEGER")
    a.precisions = [p.strip() for p in a.precision.split(",") if p.strip()]
    for p in a.precisions:
        if p not in cepgpu.TOL:
            ap.error("unknown precision '%s'" % p)
    return a


def run(a):
    """Every model, batch and precision of a, then a summary (the first jump
    of each); returns {(model, batch, precision): flagged rows}."""
    import onnx
    a.out = a.out or tempfile.mkdtemp(prefix="cudaep-bisect-")
    os.makedirs(a.out, exist_ok=True)
    daemon = cepgpu.Daemon(a.build, os.path.join(a.out, "daemon"), a.backend).start()
    results, summary = {}, []
    models = [m.strip() for m in a.zoo.split(",") if m.strip()] if a.zoo else [a.model]
    try:
        for src in models:
            for batch in a.batches:
                if time.monotonic() - T0 > a.budget_s:
                    summary.append("%s batch %d: not run (--budget-s spent)" % (src, batch))
                    continue
                try:
                    if a.zoo:
                        path, feeds = zoo_export(src, a.exporter, batch,
                                                 os.path.join(a.out, "models"), a.export_timeout)
                        model = onnx.load(path)
                        name = "%s (%s)" % (src, a.exporter)
                    else:
                        model = onnx.load(src)
                        feeds = random_inputs(model, batch, a.dims, a.int_high, a.seed)
                        name = os.path.basename(src)
                except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                    summary.append("%s batch %d: %s" % (src, batch, str(e).splitlines()[0]))
                    continue
                for p in a.precisions:
                    if time.monotonic() - T0 > a.budget_s:
                        summary.append("%s batch %d %s: not run (--budget-s spent)" % (
                            src, batch, p))
                        continue
                    title = "%s batch %d %s (%s backend)" % (name, batch, p, a.backend)
                    _, flagged, line = bisect(model, feeds, p, daemon, a, title)
                    results[(src, batch, p)] = flagged
                    summary.append(line)
    finally:
        daemon.stop()
        print("==== bisect summary (error: max |cudaep - onnxruntime fp32| / max |onnxruntime|)")
        print("\n".join(summary) if summary else "nothing ran")
    return results


def selftest(a):
    """The bisector on the host backend over a graph whose fp16 error
    appears at one known node (Sub after Add of 1000: the cancellation),
    measured in chunks of 2 with one tensor name past NAME_MAX."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper
    rng = np.random.default_rng(3)
    long_name = "t" * 200
    w1 = numpy_helper.from_array((rng.standard_normal((8, 8)) / 3).astype(np.float32), "w1")
    k = numpy_helper.from_array(np.array([1000.0], np.float32), "k")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"], name="mm1"),
             helper.make_node("Relu", ["m1"], [long_name], name="relu1"),
             helper.make_node("Add", [long_name, "k"], ["a"], name="add_k"),
             helper.make_node("Sub", ["a", "k"], ["s"], name="sub_k"),
             helper.make_node("MatMul", ["s", "w1"], ["m2"], name="mm2"),
             helper.make_node("Tanh", ["m2"], ["y"], name="tanh")]
    g = helper.make_graph(nodes, "bisect_selftest",
                          [helper.make_tensor_value_info("x", T.FLOAT, ["batch", 8])],
                          [helper.make_tensor_value_info("y", T.FLOAT, ["batch", 8])], [w1, k])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = min(m.ir_version, 9)
    onnx.checker.check_model(m)
    a.out = a.out or tempfile.mkdtemp(prefix="cudaep-bisect-selftest-")
    os.makedirs(a.out, exist_ok=True)
    a.model = os.path.join(a.out, "selftest.onnx")
    onnx.save(m, a.model)
    a.backend, a.chunk, a.batches, a.zoo = "host", 2, [3], None
    a.budget_s = float("inf")
    bad = []
    a.precisions = ["fp16", "fp32"]
    res = run(a)
    f16 = [r["name"] for r in res[(a.model, 3, "fp16")]]
    if not f16 or f16[0] != "sub_k":
        bad.append("fp16: first flagged %s, expected sub_k" % (f16[:1] or "none"))
    f32 = [r["name"] for r in res[(a.model, 3, "fp32")]]
    if f32:
        bad.append("fp32: flagged %s, expected none" % f32)
    a.only, a.precisions = ["sub_k"], ["fp16"]
    res = run(a)
    only = [r["name"] for r in res[(a.model, 3, "fp16")]]
    if only != ["sub_k"]:
        bad.append("--only sub_k: flagged %s" % only)
    a.only, a.every = [], 2
    rows = candidates(m, 2, [])
    if [t for _, t in rows] != [long_name, "s", "y"]:
        bad.append("--every 2 picks %s" % [t for _, t in rows])
    try:
        candidates(m, 1, ["nosuch"])
        bad.append("--only nosuch was accepted")
    except ValueError:
        pass
    if importlib.util.find_spec("torch") is None:
        print("SKIP: torch is not installed here: --zoo/--torchvision exports are not tested")
    for b in bad:
        print("selftest: UNEXPECTED %s" % b)
    print("selftest: %s" % ("ok" if not bad else "%d unexpected" % len(bad)))
    return 1 if bad else 0


def main(argv=None):
    a = parse(argv)
    a.build = os.path.abspath(a.build)
    if a.selftest:
        return selftest(a)
    try:
        run(a)
    except (ValueError, RuntimeError, subprocess.TimeoutExpired, cepgpu.DaemonError) as e:
        print("bisect: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
