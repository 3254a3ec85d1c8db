#!/usr/bin/env python3
"""The GPU model zoo: many architectures (random weights), each exported
with both of PyTorch's ONNX exporters, run through one CUDA cudaepd in
fp32, fp16 and bf16 sessions and compared with PyTorch fp32 on the same
GPU. Run on the GPU machine from the repository root (tests/gpu/run.sh
part zoo does):

    python3 tests/gpu/zoo.py --build .gpu-build --out OUT [--models all]
        [--exporters torchscript,dynamo] [--precisions fp32,fp16,bf16]
        [--shard I/N] [--budget-s 500] [--batch 1]

and on any machine, without torch or a GPU, the self-test of the same
machinery on the host backend over small onnx.helper graphs:

    build/venv/bin/python tests/gpu/zoo.py --selftest

What one run does:
  * exports in subprocesses (--jobs at once, --threads torch threads
    each, --export-timeout seconds each): a worker per model builds it,
    gives it random weights (cepgpu.randomize_: every parameter redrawn,
    then one pass rescales Linear/Conv outputs to unit deviation and sets
    BatchNorm statistics from real activations, perturbed), saves its
    inputs and weights, and exports with torch.onnx.export(dynamo=False,
    opset_version=17) ("torchscript") and with the dynamo exporter at its
    default opset ("dynamo"); entries with an onnxruntime model type
    (BERT, GPT-2) are also rewritten by onnxruntime.transformers.optimizer
    (python fusions only, opt_level 0, fp32 weights: com.microsoft ops),
    the "+ortopt" exporters (their "export s" is the rewrite's). A failed
    export (or build) is a result, its full message in the JSON record.
  * meanwhile, in this process, for each finished export and precision (a
    cell): cudaep-run loads the fp32 model into a session of that
    precision (the daemon converts it) and runs it (--warmup, then
    --iters timed runs, host clock, including the copies to and from its
    shared-memory region); PyTorch (TF32 off) gives the fp32 reference on
    the same GPU, and its own median over --iters runs (CUDA events) in
    the cell's precision (model.half(), .bfloat16()).
  * error: for each output, max |cudaep - reference| / max |reference|,
    and the worst output's; relative L2 likewise; and PyTorch's own error
    in the cell's precision ("torch rel", the half model against its fp32
    self), the yardstick for cudaep's. A cell passes when
    there is no NaN or infinity, the shapes agree, and the error is within
    TOL: fp32 1e-3 (float32 against float32, different kernels and
    orders of summation), fp16 2e-2 (a 10-bit mantissa through a deep
    network's tens of rounded layers), bf16 6e-2 (a 7-bit mantissa).
  * one daemon (private socket and kernel cache under OUT): a crash is
    reported with the cell and the daemon restarted; a cell that passes
    --cell-timeout (twice that for the first, which fills the kernel
    cache) is killed and the daemon pinged (restarted if it does not
    answer, or after two timeouts in a row).
  * --budget-s: no new cell starts once it is spent (counted from this
    process's start); the exporters are stopped and the table printed
    with what ran, as after SIGTERM or SIGINT (exit status 130). Each cell's record is appended to OUT/zoo.jsonl as it
    completes, so a killed run still leaves its results.
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
import json  # noqa: E402
import queue  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import cepgpu  # noqa: E402
from zoo_models import (BY_NAME, EXPECT, EXPECT_EXPORT_FAIL, GROUPS, SELFTEST,  # noqa: E402
                        SPECS)

T0 = time.monotonic()
PRECISIONS = ("fp32", "fp16", "bf16")
EXPORTERS = ("torchscript", "torchscript+ortopt", "dynamo", "dynamo+ortopt")
TOL = cepgpu.TOL


def log(*a):
    print("[%6.1f] " % (time.monotonic() - T0) + " ".join(str(x) for x in a),
          file=sys.stderr, flush=True)


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def first_line(e, limit=300):
    """An exception's (or a text's) first line, without terminal colours."""
    return detail(e, limit).split("\n")[0]


def detail(e, limit=2000):
    """An exception's text (type name first), colours removed, blank
    lines dropped, cut at limit characters."""
    text = ("%s: %s" % (type(e).__name__, e)) if isinstance(e, BaseException) else str(e)
    text = _ANSI.sub("", text)
    lines = [l.rstrip() for l in text.strip().splitlines() if l.strip()]
    return "\n".join(lines)[:limit] or type(e).__name__


def write_json(path, obj):
    """Atomically: a reader sees the whole file or none."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


# ------------------------------------------------------------- selection


def select(models, exporters, shard, selftest=False):
    """The specs and exporters asked for: models is a comma list of names
    and group names (zoo_models.GROUPS), exporters of EXPORTERS' names
    ("+ortopt" ones apply only to entries with an onnxruntime model type),
    shard "I/N" keeps every N-th model from the I-th (0-based). Raises
    ValueError naming what is unknown."""
    names = []
    for w in [w.strip() for w in models.split(",") if w.strip()]:
        if w in GROUPS:
            names += GROUPS[w]
        elif w in BY_NAME:
            names.append(w)
        else:
            raise ValueError("unknown model or group '%s' (groups: %s)" % (w, ", ".join(GROUPS)))
    names = list(collections.OrderedDict.fromkeys(names))
    if not selftest:
        st = {s.name for s in SELFTEST}
        if any(n in st for n in names):
            raise ValueError("the self-test's graphs run only with --selftest")
    exps = [e.strip() for e in exporters.split(",") if e.strip()]
    for e in exps:
        if e not in EXPORTERS:
            raise ValueError("unknown exporter '%s' (%s)" % (e, ", ".join(EXPORTERS)))
    i, n = 0, 1
    if shard:
        try:
            i, n = (int(v) for v in shard.split("/"))
        except ValueError:
            raise ValueError("--shard wants I/N, not '%s'" % shard)
        if n < 1 or not 0 <= i < n:
            raise ValueError("--shard %s: I must be in 0..N-1" % shard)
    specs = [BY_NAME[n_] for n_ in names][i::n]
    plan = collections.OrderedDict()
    for s in specs:
        mine = [e for e in EXPORTERS if e in exps and ("+" not in e or s.ort)]
        if mine:
            plan[s.name] = mine
    return [BY_NAME[n_] for n_ in plan], plan


# ------------------------------------------------------------- export worker


def graph_stats(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    g = m.graph
    inits = {i.name for i in g.initializer}
    opset = {o.domain or "ai.onnx": o.version for o in m.opset_import}
    contrib = sorted({n.op_type for n in g.node if n.domain == "com.microsoft"})
    return {"inputs": [i.name for i in g.input if i.name not in inits],
            "outputs": [o.name for o in g.output], "nodes": len(g.node),
            "opset": opset.get("ai.onnx"), "contrib_ops": contrib}


def export_torch(model, example, path, exporter, in_names, out_names):
    import torch
    kw = dict(input_names=list(in_names), output_names=list(out_names))
    if exporter == "torchscript":
        torch.onnx.export(model, example, path, dynamo=False, opset_version=17,
                          do_constant_folding=True, **kw)
        return
    try:
        torch.onnx.export(model, example, path, dynamo=True, external_data=False, **kw)
    except TypeError as e:  # a torch without the external_data argument
        if "external_data" not in str(e):
            raise
        torch.onnx.export(model, example, path, dynamo=True, **kw)


def ort_optimize(spec, src, dst):
    from onnxruntime.transformers.optimizer import optimize_model
    model_type, heads, hidden = spec.ort
    m = optimize_model(src, model_type=model_type, num_heads=heads, hidden_size=hidden,
                       opt_level=0, use_gpu=False)
    m.save_model_to_file(dst, use_external_data_format=False)
    return {k: v for k, v in m.get_fused_operator_statistics().items() if v}


def export_worker(a):
    """--export-worker: builds one model, writes DIR/inputs.npz, (torch)
    DIR/state.pt, DIR/model.json, then per exporter DIR/EXP.onnx and
    DIR/EXP.json ({"ok", "export_s", "error" or graph_stats})."""
    spec = BY_NAME[a.export_worker]
    d = a.dir
    exporters = a.exporters.split(",")
    rng = np.random.default_rng(spec.seed)
    feeds = spec.inputs(a.batch, rng)
    np.savez(os.path.join(d, "inputs.npz"), **feeds)
    info = {"inputs": list(feeds)}
    model = example = None
    t = time.monotonic()
    if spec.kind == "torch":
        try:
            torch = cepgpu.torch_setup(a.threads)
            torch.manual_seed(spec.seed)
            model = spec.make()
            example = tuple(torch.from_numpy(v) for v in feeds.values())
            # CUDAEP_ZOO_INIT=torch keeps the framework's own initialisation
            # (how a user trying a model with weights=None gets it), and
            # with it the scales the tuning would fold in again.
            if os.environ.get("CUDAEP_ZOO_INIT") != "torch":
                info["act_max"] = cepgpu.randomize_(model, spec.seed, example)
                if spec.tune:
                    spec.tune(model)
            info["params"] = int(sum(p.numel() for p in model.parameters()))
            torch.save(model.state_dict(), os.path.join(d, "state.pt"))
        except Exception as e:  # a model that cannot be built fails every export
            import traceback
            traceback.print_exc()
            for ex in exporters:
                write_json(os.path.join(d, ex + ".json"), {
                    "ok": False, "export_s": time.monotonic() - t,
                    "error": "building the model: " + first_line(e), "detail": detail(e)})
            return 1
    info["build_s"] = time.monotonic() - t
    write_json(os.path.join(d, "model.json"), info)
    done = {}
    for ex in exporters:
        base, _, post = ex.partition("+")
        path = os.path.join(d, ex + ".onnx")
        t = time.monotonic()
        rec = {"ok": False}
        try:
            if post:
                if not done.get(base):
                    raise RuntimeError("the %s export it rewrites failed" % base)
                rec["fused"] = ort_optimize(spec, os.path.join(d, base + ".onnx"), path)
            elif spec.kind == "torch":
                export_torch(model, example, path, ex, feeds.keys(), spec.outputs)
            else:
                if spec.test.get("export_hang"):
                    time.sleep(3600)
                if spec.test.get("export_fail") == ex:
                    raise RuntimeError("selftest: this exporter is made to fail")
                import onnx
                onnx.save(spec.make(ex), path)
            rec["export_s"] = time.monotonic() - t
            rec.update(graph_stats(path))
            rec["ok"] = True
        except Exception as e:  # every failure is a result
            rec["export_s"] = time.monotonic() - t
            rec["error"] = first_line(e)
            rec["detail"] = detail(e)
            print("export %s %s failed:" % (spec.name, ex), file=sys.stderr)
            import traceback
            traceback.print_exc()
        done[ex] = rec["ok"]
        write_json(os.path.join(d, ex + ".json"), rec)
    return 0


class ExportPool(threading.Thread):
    """Runs export workers, at most jobs at once, and puts
    ("export", spec, exporter, record, dir) on q as each export finishes
    (a worker that dies or passes its timeout reports its unfinished
    exporters failed), then ("done",)."""

    def __init__(self, specs, plan, root, q, jobs, threads, batch, timeout):
        super().__init__(daemon=True)
        self.pending = collections.deque(specs)
        self.plan, self.root, self.q = plan, root, q
        self.jobs, self.threads, self.batch, self.timeout = jobs, threads, batch, timeout
        self.running = {}
        self.halt = threading.Event()

    def stop(self):
        self.halt.set()
        self.join(timeout=30)

    def _start(self, spec):
        d = os.path.join(self.root, spec.name)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            if f.endswith(".json"):
                os.unlink(os.path.join(d, f))
        logf = open(os.path.join(d, "worker.log"), "wb")
        env = dict(os.environ, OMP_NUM_THREADS=str(self.threads),
                   MKL_NUM_THREADS=str(self.threads), CUDA_VISIBLE_DEVICES="")
        argv = [sys.executable, os.path.abspath(__file__), "--export-worker", spec.name,
                "--dir", d, "--exporters", ",".join(self.plan[spec.name]), "--batch",
                str(self.batch), "--threads", str(self.threads)]
        # A process group of its own, to kill it with what it started; not a
        # session of its own, so that whatever ends this run's session (the
        # device tool at its time limit) ends the workers as well.
        try:
            p = subprocess.Popen(argv, stdout=logf, stderr=logf, env=env, process_group=0)
        except TypeError:  # Python before 3.11
            p = subprocess.Popen(argv, stdout=logf, stderr=logf, env=env,
                                 preexec_fn=lambda: os.setpgid(0, 0))
        logf.close()
        self.running[spec.name] = [p, time.monotonic(), d, spec, set()]

    def _collect(self, name, why=None):
        p, _, d, spec, seen = self.running[name]
        for ex in self.plan[name]:
            if ex in seen:
                continue
            j = os.path.join(d, ex + ".json")
            if os.path.exists(j):
                with open(j) as f:
                    rec = json.load(f)
            elif why is None:
                continue
            else:
                rec = {"ok": False, "error": why, "export_s": time.monotonic() -
                       self.running[name][1]}
            seen.add(ex)
            self.q.put(("export", spec, ex, rec, d))

    def limit(self, name):
        return self.running[name][3].test.get("export_timeout", self.timeout)

    @staticmethod
    def _kill(p):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()

    def run(self):
        try:
            while not self.halt.is_set() and (self.pending or self.running):
                while self.pending and len(self.running) < self.jobs:
                    self._start(self.pending.popleft())
                for name in list(self.running):
                    p, t, d, _, _ = self.running[name]
                    self._collect(name)
                    if p.poll() is not None:
                        self._collect(name, "worker exited with %d: %s" % (
                            p.returncode, _last_line(os.path.join(d, "worker.log"))))
                        del self.running[name]
                    elif time.monotonic() - t > self.limit(name):
                        self._kill(p)
                        self._collect(name, "timed out after %g s" % self.limit(name))
                        del self.running[name]
                self.halt.wait(0.1)
        finally:
            for name in list(self.running):
                self._kill(self.running[name][0])
            self.q.put(("done",))


def _last_line(path):
    try:
        with open(path, "rb") as f:
            lines = [l for l in f.read().decode(errors="replace").splitlines() if l.strip()]
        return lines[-1].strip()[:300] if lines else ""
    except OSError:
        return ""


# ------------------------------------------------------------- references


class _Alarm:
    """Raises TimeoutError in the main thread after seconds (SIGALRM)."""

    def __init__(self, seconds):
        self.seconds = max(1, int(seconds))

    def _fire(self, *a):
        raise TimeoutError("no answer in %d s" % self.seconds)

    def __enter__(self):
        self.old = signal.signal(signal.SIGALRM, self._fire)
        signal.alarm(self.seconds)

    def __exit__(self, *exc):
        signal.alarm(0)
        signal.signal(signal.SIGALRM, self.old)


def load_inputs(d):
    with open(os.path.join(d, "model.json")) as f:
        order = json.load(f)["inputs"]
    z = np.load(os.path.join(d, "inputs.npz"))
    return collections.OrderedDict((k, z[k]) for k in order)


def torch_reference(spec, d, precisions, iters, warmup, device="cuda"):
    """{"outputs": fp32 outputs on device (numpy), "ms": {precision: median
    ms or None}, "err": {precision: the half model's max_rel error against
    those outputs}, "notes": [...]}, from the worker's saved weights."""
    torch = cepgpu.torch_setup()
    model = spec.make()
    model.load_state_dict(torch.load(os.path.join(d, "state.pt"), map_location="cpu"))
    model.eval()
    dev = torch.device(device)
    model = model.to(dev)
    args = [torch.from_numpy(v).to(dev) for v in load_inputs(d).values()]
    res = {"ms": {}, "err": {}, "notes": []}
    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    try:
        with torch.inference_mode():
            outs = cepgpu.flatten_outputs(model(*args))
            res["outputs"] = [(o.float() if o.is_floating_point() else o).cpu().numpy()
                              for o in outs]
            for prec in [p for p in PRECISIONS if p in precisions]:
                try:
                    m = model.to(dtypes[prec])  # in place: fp32, then fp16, then bf16
                    a = [t.to(dtypes[prec]) if t.is_floating_point() else t for t in args]
                    if prec != "fp32":
                        # PyTorch's own error in this precision: the yardstick
                        # for cudaep's (a deep random network may pass the
                        # tolerance in neither).
                        half = [(o.float() if o.is_floating_point() else o).cpu().numpy()
                                for o in cepgpu.flatten_outputs(m(*a))]
                        res["err"][prec] = cepgpu.compare(half, res["outputs"])[0]
                    res["ms"][prec] = cepgpu.median_ms(lambda: m(*a), iters, warmup, device)
                except Exception as e:  # a model PyTorch cannot run in half: a note
                    res["ms"][prec] = None
                    res["notes"].append("torch %s: %s" % (prec, first_line(e)))
    finally:
        model = m = a = args = outs = None  # the GPU's memory goes back before the next model
        torch.cuda.empty_cache()
    return res


def ort_reference(spec, d, path, precisions, iters, warmup):
    """The self-test's reference: onnxruntime CPU fp32 (its ms in every
    precision's column)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feeds = feeds_for([i.name for i in s.get_inputs()], load_inputs(d))
    outs = s.run(None, feeds)
    for _ in range(warmup):
        s.run(None, feeds)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        s.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    ms = float(np.median(times))
    return {"outputs": outs, "ms": {p: ms for p in precisions}, "err": {}, "notes": []}


def feeds_for(names, feeds):
    """The graph's inputs (names) from the saved feeds: by name, else by
    position when the counts agree (an exporter that renamed them). Raises
    KeyError naming an input it cannot place."""
    out = collections.OrderedDict()
    keys = list(feeds)
    for i, n in enumerate(names):
        if n in feeds:
            out[n] = feeds[n]
        elif len(names) == len(keys):
            out[n] = feeds[keys[i]]
        else:
            raise KeyError("graph input '%s' is none of %s" % (n, ", ".join(keys)))
    return out


# ------------------------------------------------------------- cells


class Zoo:
    """One run: the daemon, the references, the records."""

    def __init__(self, a, plan):
        self.a = a
        self.plan = plan
        self.out = os.path.abspath(a.out)
        self.work = os.path.join(self.out, "work")
        os.makedirs(self.work, exist_ok=True)
        self.jsonl = open(os.path.join(self.out, "zoo.jsonl"), "a")
        self.daemon = cepgpu.Daemon(a.build, os.path.join(self.out, "daemon"), a.backend)
        self.refs = {}
        self.records = []
        self.daemon_down = None
        self.timeouts = 0  # cells in a row that timed out
        self.cold = True  # no cell has run yet: the kernel cache is empty
        self.restarts = []  # why the daemon was restarted, in order

    def over(self):
        return time.monotonic() - T0 >= self.a.budget_s

    def left(self):
        """Seconds any one step may still take: a cell started just before
        the budget ran out may overrun it by at most the grace."""
        return max(1.0, self.a.budget_s + self.a.grace_s - (time.monotonic() - T0))

    def emit(self, rec):
        rec["t"] = round(time.monotonic() - T0, 2)
        self.records.append(rec)
        self.jsonl.write(json.dumps(rec, default=float) + "\n")
        self.jsonl.flush()
        if rec.get("kind") == "cell":
            log("%-28s %-19s %-4s %s" % (rec["model"], rec["exporter"], rec["precision"],
                                         rec["result"][:150]))

    def reference(self, spec, d, path):
        if spec.name not in self.refs:
            t = time.monotonic()
            try:
                with _Alarm(min(self.a.ref_timeout, self.left())):
                    if spec.kind == "torch":
                        r = torch_reference(spec, d, self.a.precisions, self.a.iters,
                                            self.a.warmup, self.a.torch_device)
                    else:
                        r = ort_reference(spec, d, path, self.a.precisions, self.a.iters,
                                          self.a.warmup)
            except Exception as e:  # no reference: the cells still run and say so
                r = {"outputs": None, "ms": {}, "err": {}, "notes": [], "error": first_line(e)}
            r["s"] = time.monotonic() - t
            self.refs[spec.name] = r
            self.emit({"kind": "reference", "model": spec.name, "s": r["s"],
                       "torch_ms": r["ms"], "torch_err": r["err"], "notes": r["notes"],
                       "error": r.get("error")})
        return self.refs[spec.name]

    def ensure_daemon(self, why):
        """True when a daemon runs; restarts a dead one, recording why (once
        a restart fails, every later cell says so)."""
        if self.daemon_down:
            return False
        if self.daemon.alive():
            return True
        self.restarts.append(why)
        self.emit({"kind": "daemon", "event": "restart", "why": why,
                   "status": self.daemon.exit_status(), "log": self.daemon.log_tail(30)})
        try:
            self.daemon.restart()
            return True
        except cepgpu.DaemonError as e:
            self.daemon_down = first_line(e)
            return False

    def export_failed(self, spec, ex, rec):
        self.emit({"kind": "cell", "model": spec.name, "exporter": ex, "precision": "*",
                   "export_s": rec.get("export_s"),
                   "result": "export failed: %s" % rec.get("error", "?")})

    def cell(self, spec, ex, prec, rec, d):
        path = os.path.join(d, ex + ".onnx")
        row = {"kind": "cell", "model": spec.name, "exporter": ex, "precision": prec,
               "batch": self.a.batch, "export_s": rec.get("export_s"), "nodes": rec.get("nodes"),
               "opset": rec.get("opset")}
        try:
            feeds = feeds_for(rec["inputs"], load_inputs(d))
        except (KeyError, OSError, ValueError) as e:
            row["result"] = "FAIL inputs: %s" % first_line(e)
            return self.emit(row)
        ref = self.reference(spec, d, path)
        row["torch_ms"] = ref["ms"].get(prec)
        row["torch_err"] = ref["err"].get(prec)
        label = "%s/%s/%s" % (spec.name, ex, prec)
        if not self.ensure_daemon("found dead (%s) before %s" % (self.daemon.exit_status(),
                                                                  label)):
            row["result"] = "FAIL no daemon: %s" % self.daemon_down
            return self.emit(row)
        if spec.test.get("kill_daemon") == prec:
            self.daemon.kill()  # the self-test's stand-in for a crash mid-cell
        timeout = spec.test.get("cell_timeout", self.a.cell_timeout)
        if self.cold:  # the first load compiles most kernels into an empty cache
            timeout *= 2
        self.cold = False
        timeout = min(timeout, self.left())
        r = cepgpu.cudaep_run(self.a.build, self.daemon.sock, path, feeds, rec["outputs"], prec,
                              self.a.iters, self.a.warmup, self.work, "cell", timeout)
        row.update(load_ms=r.load_ms, first_ms=r.first_ms, cudaep_ms=r.median_ms)
        if not self.daemon.alive():
            err = self.daemon.last_error()
            row["result"] = "FAIL daemon crashed (%s) in this cell%s" % (
                self.daemon.exit_status(), (": " + err[:200]) if err else "")
            self.ensure_daemon("crashed (%s) in %s" % (self.daemon.exit_status(), label))
            return self.emit(row)
        self.timeouts = self.timeouts + 1 if r.stage == "timeout" else 0
        if r.stage == "timeout":
            row["result"] = "FAIL timeout: %s" % r.message
            # A daemon that answers pings but whose device is stuck times
            # out cell after cell: the second in a row restarts it too.
            if not self.daemon.responsive() or self.timeouts >= 2:
                row["result"] += " (daemon restarted)"
                self.timeouts = 0
                self.daemon.kill()
                self.ensure_daemon("stuck after a timeout in %s" % label)
            return self.emit(row)
        if r.stage == "load":
            row["result"] = "not loaded: %s" % r.message
            return self.emit(row)
        if not r.ok:
            row["result"] = "FAIL %s: %s" % (r.stage, r.message)
            return self.emit(row)
        if ref.get("outputs") is None:
            row["result"] = "ran; no reference: %s" % ref.get("error")
            return self.emit(row)
        err, l2, problem = cepgpu.compare(r.outputs, ref["outputs"])
        row.update(err=err, l2=l2)
        if problem:
            row["result"] = "FAIL %s" % problem
        elif err <= TOL[prec]:
            row["result"] = "pass"
        else:
            row["result"] = "FAIL err %.1e > %.0e" % (err, TOL[prec])
            if row["torch_err"] is not None:
                row["result"] += " (torch %s: %.1e)" % (prec, row["torch_err"])
        return self.emit(row)

    def run(self, specs):
        q = queue.Queue()
        pool = ExportPool(specs, self.plan, os.path.join(self.out, "exports"), q,
                          self.a.jobs, self.a.threads, self.a.batch, self.a.export_timeout)
        try:
            self.daemon.start()
        except cepgpu.DaemonError as e:
            self.daemon_down = first_line(e)
        log("daemon: %s" % (self.daemon_down or self.daemon.sock))
        pool.start()
        try:
            while not self.over():
                try:
                    item = q.get(timeout=0.5)
                except queue.Empty:
                    continue
                if item[0] == "done":
                    break
                _, spec, ex, rec, d = item
                self.emit({"kind": "export", "model": spec.name, "exporter": ex, **rec})
                if not rec.get("ok"):
                    self.export_failed(spec, ex, rec)
                    continue
                for prec in self.a.precisions:
                    if self.over():
                        break
                    self.cell(spec, ex, prec, rec, d)
        finally:
            pool.stop()
            st = self.daemon.stop()
            log("daemon stopped: %s" % st)
            self.jsonl.close()


# ------------------------------------------------------------- the table


def _f(v, fmt):
    return "-" if v is None or (isinstance(v, float) and v != v) else fmt % v


def table(records, plan, precisions, header=""):
    """The table's text: one row per cell (one per exporter when the
    export failed), then what did not run and the counts."""
    cells = [r for r in records if r.get("kind") == "cell"]
    lines = ["==== zoo table" + (" (%s)" % header if header else "")]
    cols = ("model", "exporter", "prec", "export s", "load ms", "first ms", "cudaep ms",
            "torch ms", "max rel", "rel L2", "torch rel", "result")
    fmt = "%-29s %-18s %-4s %8s %8s %8s %9s %9s %8s %8s %9s  %s"
    lines.append(fmt % cols)
    for r in cells:
        lines.append(fmt % (r["model"], r["exporter"], r["precision"],
                            _f(r.get("export_s"), "%.1f"), _f(r.get("load_ms"), "%.1f"),
                            _f(r.get("first_ms"), "%.2f"), _f(r.get("cudaep_ms"), "%.3f"),
                            _f(r.get("torch_ms"), "%.3f"), _f(r.get("err"), "%.1e"),
                            _f(r.get("l2"), "%.1e"), _f(r.get("torch_err"), "%.1e"),
                            r["result"][:160]))
    done = collections.defaultdict(set)
    for r in cells:
        done[(r["model"], r["exporter"])].add(r["precision"])
    missing = []
    for m, exps in plan.items():
        for e in exps:
            got = done.get((m, e), set())
            if "*" in got:
                continue
            left = [p for p in precisions if p not in got]
            if left:
                missing.append("%s/%s %s" % (m, e, ",".join(left)))
    if missing:
        lines.append("not run (budget spent or stopped): " + "; ".join(missing))
    count = collections.Counter()
    for r in cells:
        res = r["result"]
        key = "pass" if res == "pass" else res.split(":")[0].split(" (")[0]
        key = "FAIL" if key.startswith("FAIL") else key
        count[key] += 1
    lines.append("cells: " + ", ".join("%s %d" % kv for kv in sorted(count.items())) +
                 "; not run %d; tolerances (max rel) %s" % (
                     len(missing), ", ".join("%s %g" % kv for kv in TOL.items())))
    restarts = [r["why"] for r in records if r.get("kind") == "daemon"]
    if restarts:
        lines.append("daemon restarted %d times: %s" % (len(restarts), "; ".join(restarts)))
    lines.append("max rel: max |cudaep - torch fp32| / max |torch fp32|, worst output; "
                 "torch rel: PyTorch's own in the cell's precision (model.half(), "
                 ".bfloat16()), the yardstick")
    return "\n".join(lines)


# ------------------------------------------------------------- main


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("CUDAEP_BUILD_DIR", "build"))
    ap.add_argument("--out", default=None, help="results, logs and exports (default: a temp dir)")
    ap.add_argument("--models", default="all", help="names and groups: %s" % ", ".join(GROUPS))
    ap.add_argument("--exporters", default=",".join(EXPORTERS))
    ap.add_argument("--precisions", default=",".join(PRECISIONS))
    ap.add_argument("--shard", default=None, help="I/N: every N-th model from the I-th")
    ap.add_argument("--batch", type=int, default=1, help="batch of the image models "
                    "(text models take at least 2)")
    ap.add_argument("--budget-s", type=float, default=500)
    ap.add_argument("--grace-s", type=float, default=45,
                    help="how far a cell started before the budget's end may run past it")
    ap.add_argument("--cell-timeout", type=float, default=60)
    ap.add_argument("--export-timeout", type=float, default=240)
    ap.add_argument("--ref-timeout", type=float, default=120)
    ap.add_argument("--jobs", type=int, default=6, help="export workers at once")
    ap.add_argument("--threads", type=int, default=2, help="torch threads per worker")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--backend", default="cuda", help="the daemon's")
    ap.add_argument("--torch-device", default="cuda",
                    help="where PyTorch's reference runs (cpu: a host run of the zoo)")
    ap.add_argument("--keep-models", action="store_true",
                    help="keep the exported .onnx files, weights and inputs")
    ap.add_argument("--list", action="store_true", help="print the models and groups")
    ap.add_argument("--selftest", action="store_true",
                    help="the machinery on the host backend over small graphs (no torch)")
    ap.add_argument("--export-worker", metavar="MODEL", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.precisions = [p.strip() for p in a.precisions.split(",") if p.strip()]
    for p in a.precisions:
        if p not in TOL:
            ap.error("unknown precision '%s' (%s)" % (p, ", ".join(TOL)))
    return a


def run(a, selftest=False):
    """The zoo over a's selection; returns (records, plan)."""
    specs, plan = select(a.models, a.exporters, a.shard, selftest)
    if not specs:
        raise ValueError("nothing selected")
    a.out = a.out or tempfile.mkdtemp(prefix="cudaep-zoo-")
    os.makedirs(a.out, exist_ok=True)
    log("zoo: %d models, %d exports, precisions %s, budget %g s, out %s" % (
        len(specs), sum(len(v) for v in plan.values()), ",".join(a.precisions),
        a.budget_s, a.out))
    z = Zoo(a, plan)
    try:
        z.run(specs)
    except KeyboardInterrupt:  # SIGINT or SIGTERM: the table of what ran
        log("zoo: interrupted")
        a.interrupted = True
    finally:
        if not a.keep_models:
            _drop_models(os.path.join(a.out, "exports"))
        shutil.rmtree(z.work, ignore_errors=True)
    return z.records, plan


def _drop_models(root):
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith((".onnx", ".data", ".pt", ".npz")):
                os.unlink(os.path.join(dirpath, f))


def describe(a):
    try:
        torch = cepgpu.torch_setup()
        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
        return "torch %s, %s, batch %d, %d timed runs, medians" % (
            torch.__version__, gpu, a.batch, a.iters)
    except ImportError:
        return "no torch, batch %d" % a.batch


def selftest(a):
    """The machinery on the host backend over zoo_models.SELFTEST, against
    the results zoo_models.EXPECT lists; returns 0 when all are as
    expected."""
    a.models, a.backend = "selftest", "host"
    a.budget_s = min(a.budget_s, 120)
    a.jobs = min(a.jobs, 3)
    a.iters, a.warmup = min(a.iters, 3), min(a.warmup, 1)
    a.exporters = "torchscript,torchscript+ortopt,dynamo"
    records, plan = run(a, selftest=True)
    print(table(records, plan, a.precisions, "self-test, host backend; reference: onnxruntime"))
    bad = []
    got = {(r["model"], r["exporter"], r["precision"]): r["result"]
           for r in records if r.get("kind") == "cell"}
    no_sympy = importlib.util.find_spec("sympy") is None  # onnxruntime.transformers needs it
    if no_sympy:
        print("SKIP: sympy is not installed here: the +ortopt rewrite is expected to "
              "fail with an ImportError")
    for m, exps in plan.items():
        for e in exps:
            if no_sympy and e.endswith("+ortopt"):
                res = got.get((m, e, "*"), "not run")
                if not res.startswith("export failed: ImportError"):
                    bad.append("%s/%s: %r, expected an ImportError" % (m, e, res))
                continue
            if (m, e) in EXPECT_EXPORT_FAIL:
                want = EXPECT_EXPORT_FAIL[(m, e)]
                res = got.get((m, e, "*"), "not run")
                if not res.startswith(want):
                    bad.append("%s/%s: %r, expected %r" % (m, e, res, want))
                continue
            for p in a.precisions:
                want = EXPECT[m].get(p, EXPECT[m].get("*"))
                res = got.get((m, e, p), got.get((m, e, "*"), "not run"))
                if not res.startswith(want):
                    bad.append("%s/%s/%s: %r, expected %r" % (m, e, p, res, want))
    if importlib.util.find_spec("torch") is None:
        print("SKIP: torch is not installed here: the %d torch models' export, weights "
              "and PyTorch reference are not tested by the self-test" % len(SPECS))
    for b in bad:
        print("selftest: UNEXPECTED %s" % b)
    print("selftest: %s (%d cells)" % ("ok" if not bad else "%d unexpected" % len(bad),
                                       len(got)))
    return 1 if bad else 0


def main(argv=None):
    a = parse(argv)
    if a.export_worker:
        return export_worker(a)
    if a.list:
        for g, names in GROUPS.items():
            print("%-12s %s" % (g, ", ".join(names)))
        return 0
    a.build = os.path.abspath(a.build)
    a.interrupted = False
    signal.signal(signal.SIGTERM, _interrupt)
    if a.selftest:
        return selftest(a)
    try:
        records, plan = run(a)
    except ValueError as e:
        print("zoo: %s" % e, file=sys.stderr)
        return 2
    text = table(records, plan, a.precisions, describe(a))
    with open(os.path.join(a.out, "table.txt"), "w") as f:
        f.write(text + "\n")
    print(text)
    return 130 if a.interrupted else 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt("signal %d" % signum)


if __name__ == "__main__":
    sys.exit(main())
