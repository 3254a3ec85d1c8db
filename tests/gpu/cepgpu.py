"""Helpers shared by the GPU machine's Python scripts (bench/models.py,
tests/gpu/zoo.py, tests/gpu/bisect.py): a private cudaepd that can be
restarted, cudaep-run as a bounded subprocess, the error measures, and
PyTorch's side (TF32 off, random weights of a sane scale, CUDA-event
timing).

Nothing here imports torch or onnx at module level, so the host's
self-tests (tests/gpu/zoo.py --selftest, python/tests/test_gpu_scripts.py)
use the same code without them.
"""
import json
import os
import signal
import socket
import subprocess
import time

import numpy as np

# ------------------------------------------------------------- the daemon


class DaemonError(RuntimeError):
    pass


class Daemon:
    """One cudaepd on a private socket and kernel cache under work/, its
    output in work/cudaepd-N.log (N counts the starts). start() waits until
    the socket answers; restart() kills a stuck or dead one and starts
    another on the same socket and cache."""

    def __init__(self, build, work, backend="cuda", extra=()):
        self.build = os.path.abspath(build)
        self.work = os.path.abspath(work)
        self.backend = backend
        self.extra = list(extra)
        self.sock = os.path.join(self.work, "cudaep.sock")
        self.cache = os.path.join(self.work, "kcache")
        self.proc = None
        self.starts = 0
        self.log_path = None

    def start(self, timeout=60):
        os.makedirs(self.work, exist_ok=True)
        self.starts += 1
        self.log_path = os.path.join(self.work, "cudaepd-%d.log" % self.starts)
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        logf = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [os.path.join(self.build, "bin", "cudaepd"), "--socket", self.sock,
             "--backend", self.backend, "--cache-dir", self.cache] + self.extra,
            stdout=logf, stderr=logf)
        logf.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise DaemonError("cudaepd exited with %d: %s"
                                  % (self.proc.returncode, self.log_tail(5)))
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                s.connect(self.sock)
                return self
            except OSError:
                time.sleep(0.05)
            finally:
                s.close()
        self.kill()
        raise DaemonError("cudaepd did not come up in %g s: %s" % (timeout, self.log_tail(5)))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def exit_status(self):
        """How the daemon ended ("exit 1", "signal SIGSEGV"), or None while
        it runs."""
        if self.proc is None or self.proc.poll() is None:
            return None
        rc = self.proc.returncode
        if rc < 0:
            try:
                return "signal " + signal.Signals(-rc).name
            except ValueError:
                return "signal %d" % -rc
        return "exit %d" % rc

    def responsive(self, timeout=10):
        """True when the daemon answers a ping within timeout seconds."""
        if not self.alive():
            return False
        try:
            r = subprocess.run([os.path.join(self.build, "bin", "cudaepctl"), "--socket",
                                self.sock, "ping"], capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return r.returncode == 0

    def log_tail(self, n=20):
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode(errors="replace").splitlines()
        except (OSError, TypeError):
            return ""
        return "\n".join(lines[-n:])

    def last_error(self):
        """The daemon's last logged line at error priority or worse
        ("<3>..." and below), without the priority; "" if none."""
        for line in reversed(self.log_tail(200).splitlines()):
            if len(line) > 3 and line[0] == "<" and line[2] == ">" and line[1] in "0123":
                return line[3:].strip()
        return ""

    def kill(self):
        if self.alive():
            self.proc.kill()
            self.proc.wait()

    def stop(self, timeout=20):
        """SIGTERM, then SIGKILL after timeout seconds; returns the exit
        status string (None if it was never started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.exit_status()

    def restart(self):
        self.kill()
        return self.start()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


# ------------------------------------------------------------- cudaep-run


class RunResult:
    """What one cudaep-run call gave. stage is "ok", "load" (the daemon
    refused the model: message is its reason), "run" (a run or an output
    failed), "timeout" or "tool" (cudaep-run itself: bad arguments, no
    daemon). Times in ms; outputs in the order of output_names."""

    def __init__(self, stage, message="", load_ms=None, first_ms=None, median_ms=None,
                 outputs=None):
        self.stage = stage
        self.message = message
        self.load_ms = load_ms
        self.first_ms = first_ms
        self.median_ms = median_ms
        self.outputs = outputs or []

    @property
    def ok(self):
        return self.stage == "ok"


def _first_error_line(text):
    """The most telling line of cudaep-run's stderr: the last line naming
    the tool, else the last line."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    if not lines:
        return ""
    for l in reversed(lines):
        if l.startswith("cudaep-run:"):
            return l[len("cudaep-run:"):].strip()
    return lines[-1]


def cudaep_run(build, sock, model, feeds, output_names, precision="fp32", iters=20,
               warmup=3, work=None, tag="run", timeout=60):
    """Runs model through the daemon at sock with cudaep-run: feeds
    ({input name: array}) are written as .npy files under work, every name
    of output_names is saved and read back. Returns a RunResult; never
    raises for the model's or the daemon's failures."""
    work = work or os.path.dirname(os.path.abspath(model))
    args = [os.path.join(build, "bin", "cudaep-run"), "--socket", sock, "--json",
            "--iters", str(iters), "--warmup", str(max(1, warmup)), "--precision", precision]
    files = []
    for name, v in feeds.items():
        p = os.path.join(work, "%s-in-%d.npy" % (tag, len(files)))
        np.save(p, np.ascontiguousarray(v))
        files.append(p)
        args += ["--input", "%s=%s" % (name, p)]
    outs = []
    for i, name in enumerate(output_names):
        p = os.path.join(work, "%s-out-%d.npy" % (tag, i))
        if os.path.exists(p):
            os.unlink(p)
        outs.append(p)
        args += ["--output", "%s=%s" % (name, p)]
    args.append(model)
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        res = RunResult("timeout", "no answer in %g s" % timeout)
    else:
        res = _parse_run(r, outs)
    for p in files + outs:
        if os.path.exists(p):
            os.unlink(p)
    return res


def _parse_run(r, outs):
    if r.returncode != 0:
        msg = _first_error_line(r.stderr) or _first_error_line(r.stdout) or \
            "cudaep-run exited with %d" % r.returncode
        if msg.startswith("cannot load "):
            # "cannot load PATH: reason": the reason is the daemon's.
            return RunResult("load", msg.split(": ", 1)[-1])
        if msg.startswith("run ") or msg.startswith("output "):
            return RunResult("run", msg)
        return RunResult("tool", msg)
    try:
        j = json.loads(r.stdout)
        arrays = [np.load(p) for p in outs]
    except (ValueError, OSError) as e:
        return RunResult("tool", "unreadable result: %s" % e)
    return RunResult("ok", "", j["load_us"] / 1e3, j["first_run_us"] / 1e3,
                     j["latency_us"]["p50"] / 1e3, arrays)


# ------------------------------------------------------------- errors

# Pass tolerances on max |cudaep - reference| / max |reference| against a
# float32 reference: fp32 1e-3 (float32 against float32, other kernels and
# orders of summation), fp16 2e-2 (a 10-bit mantissa through tens of
# rounded layers), bf16 6e-2 (a 7-bit mantissa).
TOL = {"fp32": 1e-3, "fp16": 2e-2, "bf16": 6e-2}
# Unit roundoff of each precision: an error below it is no error.
ROUNDOFF = {"fp32": 6e-8, "fp16": 4.9e-4, "bf16": 3.9e-3}


def max_rel(got, ref):
    """max |got - ref| / max |ref| in float64 (inf when got has a NaN or
    an infinity where ref does not, or ref is all zero and got is not)."""
    g = np.asarray(got, dtype=np.float64)
    r = np.asarray(ref, dtype=np.float64)
    if g.size == 0:
        return 0.0
    bad = ~np.isfinite(g) & np.isfinite(r)
    if bad.any():
        return float("inf")
    fin = np.isfinite(r)
    d = np.abs(np.where(fin, g - r, 0.0)).max()
    scale = np.abs(np.where(fin, r, 0.0)).max()
    if scale == 0:
        return 0.0 if d == 0 else float("inf")
    return float(d / scale)


def rel_l2(got, ref):
    """||got - ref|| / ||ref|| in float64 (inf as max_rel)."""
    g = np.asarray(got, dtype=np.float64)
    r = np.asarray(ref, dtype=np.float64)
    if g.size == 0:
        return 0.0
    if not np.isfinite(g).all():
        return float("inf")
    n = np.linalg.norm(r)
    d = np.linalg.norm(g - r)
    if n == 0:
        return 0.0 if d == 0 else float("inf")
    return float(d / n)


def compare(gots, refs):
    """Compares outputs with references, both lists in the model's output
    order. Returns (max_rel, rel_l2, problem): the worst output's
    measures, and None or a sentence saying why they cannot pass (a count
    or shape that differs, a NaN or infinity)."""
    if len(gots) != len(refs):
        return float("nan"), float("nan"), "%d outputs, the reference has %d" % (
            len(gots), len(refs))
    worst, worst_l2, problem = 0.0, 0.0, None
    for i, (g, r) in enumerate(zip(gots, refs)):
        g, r = np.asarray(g), np.asarray(r)
        if g.shape != r.shape:
            return float("nan"), float("nan"), "output %d has shape %s, the reference %s" % (
                i, tuple(g.shape), tuple(r.shape))
        if g.dtype.kind == "f" and not np.isfinite(g).all() and problem is None:
            problem = "NaN/inf in output %d" % i
        worst = max(worst, max_rel(g, r))
        worst_l2 = max(worst_l2, rel_l2(g, r))
    return worst, worst_l2, problem


# ------------------------------------------------------------- PyTorch


def torch_setup(threads=None):
    """Imports torch with TF32 off everywhere (the fp32 reference must be
    float32's); threads: torch.set_num_threads. Returns the module."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if threads:
        torch.set_num_threads(threads)
    return torch


def hf_eager(cfg):
    """Asks a transformers config for eager attention (explicit MatMul and
    Softmax in the exported graph) in the ways transformers 4 and 5
    accept."""
    for attr in ("_attn_implementation", "attn_implementation"):
        try:
            setattr(cfg, attr, "eager")
            return cfg
        except (AttributeError, TypeError, ValueError):
            pass
    return cfg


_NORM_WORDS = ("Norm",)
_WEIGHTED = ("Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
             "ConvTranspose3d", "Conv1D", "NonDynamicallyQuantizableLinear")


def _kind(mod):
    import torch.nn as nn
    if isinstance(mod, nn.Embedding):
        return "embedding"
    if isinstance(mod, (nn.Linear, nn.modules.conv._ConvNd)) or type(mod).__name__ in _WEIGHTED:
        return "weighted"
    if any(w in type(mod).__name__ for w in _NORM_WORDS):
        return "norm"
    return "other"


def randomize_(model, seed, example=None):
    """Gives every floating-point parameter of model (in place) random
    values of a sensible scale, whatever its initialiser did (zero heads,
    layer scales of 1e-6, norms of exactly 1 and 0 hide bugs):

      Linear/Conv weights N(0, 1/fan_in), their biases N(0, 0.1);
      embeddings N(0, 1); norm weights N(1, 0.1), norm biases N(0, 0.1);
      attention projections held as bare parameters (*proj_weight)
      N(0, 1/fan_in); any other parameter N(0, 0.5);
      BatchNorm running means N(0, 0.2), running variances in [0.5, 2].

    With example (a tuple of input tensors), one forward pass then
    rescales each Linear/Conv (weight and bias together) so that its output
    has unit standard deviation on example (as LSUV does), and sets each
    BatchNorm's running statistics from its actual input: variances its
    mean square over all channels times e^{0.2 N(0,1)} per channel, means
    0.1 rms N(0,1), so activations neither vanish nor explode in any depth
    of network (nor do rounding errors: see _calibrate). Buffers other than
    BatchNorm's (rotary frequencies, position indices, causal masks) are
    left alone: they are not weights. Returns the largest |value| any
    module put out in a second pass (inf if any was not finite), or None
    without example."""
    import torch
    import torch.nn as nn
    g = torch.Generator().manual_seed(seed)

    def normal(shape, mean, std):
        return torch.randn(shape, generator=g) * std + mean

    seen = set()
    shared = set()
    for mod in model.modules():
        for _, p in mod.named_parameters(recurse=False):
            (shared if id(p) in seen else seen).add(id(p))
    seen.clear()
    with torch.no_grad():
        for mod in model.modules():
            kind = _kind(mod)
            for pname, p in mod.named_parameters(recurse=False):
                if id(p) in seen or not p.is_floating_point():
                    continue
                seen.add(id(p))
                shape = p.shape
                if kind == "weighted" and pname == "weight":
                    fan = shape[0] if type(mod).__name__ == "Conv1D" else \
                        max(1, p.numel() // max(1, shape[0]))
                    v = normal(shape, 0.0, fan ** -0.5)
                elif kind == "embedding":
                    v = normal(shape, 0.0, 1.0)
                elif kind == "norm" and pname == "weight":
                    v = normal(shape, 1.0, 0.1)
                elif pname.endswith("bias"):
                    v = normal(shape, 0.0, 0.1)
                elif pname.endswith("proj_weight") and len(shape) == 2:
                    v = normal(shape, 0.0, shape[1] ** -0.5)
                else:
                    v = normal(shape, 0.0, 0.5)
                p.copy_(v.to(p.dtype))
            if isinstance(mod, nn.modules.batchnorm._BatchNorm) and mod.track_running_stats \
                    and mod.running_mean is not None:
                c = mod.running_mean.shape
                mod.running_mean.copy_(normal(c, 0.0, 0.2))
                mod.running_var.copy_(torch.rand(c, generator=g) * 1.5 + 0.5)
    if example is None:
        return None
    model.eval()
    _calibrate(model, example, g, shared)
    return _act_max(model, example)


def _calibrate(model, example, g, shared):
    import torch
    import torch.nn as nn
    done = set()
    hooks = []

    def lsuv(mod, inp, out):
        if id(mod) in done or not torch.is_tensor(out) or not out.is_floating_point():
            return None
        done.add(id(mod))
        sd = out.float().std()
        if not torch.isfinite(sd) or sd <= 0 or out.numel() < 2:
            return None
        mod.weight.div_(sd)
        if getattr(mod, "bias", None) is not None:
            mod.bias.div_(sd)
        return out / sd

    def bn(mod, inp):
        x = inp[0]
        if id(mod) in done or not torch.is_tensor(x):
            return
        done.add(id(mod))
        dims = [d for d in range(x.dim()) if d != 1]
        if x.numel() // max(1, x.shape[1]) < 8:
            return  # too few samples per channel: keep the random statistics
        # The channels' mean square (one for all, each channel's perturbed)
        # as the variance, and small random means: subtracting each
        # channel's actual mean makes a random deep network chaotic, its
        # rounding errors growing some 5% a layer (ResNet-50 in bf16 on
        # exact kernels: 0.14 of the output's max instead of 6e-3), and a
        # channel's own tiny variance would blow up its errors too.
        ms = x.float().pow(2).mean(dims).mean()
        c = mod.running_mean.shape
        mod.running_mean.copy_(0.1 * ms.sqrt() * torch.randn(c, generator=g))
        mod.running_var.copy_(ms * torch.exp(0.2 * torch.randn(c, generator=g)) + 1e-3)

    for mod in model.modules():
        if _kind(mod) == "weighted" and id(getattr(mod, "weight", None)) not in shared \
                and getattr(mod, "weight", None) is not None:
            hooks.append(mod.register_forward_hook(lsuv))
        elif isinstance(mod, nn.modules.batchnorm._BatchNorm) and mod.track_running_stats \
                and mod.running_mean is not None:
            hooks.append(mod.register_forward_pre_hook(bn))
    try:
        with torch.no_grad():
            model(*example)
    finally:
        for h in hooks:
            h.remove()


def _act_max(model, example):
    import torch
    top = [0.0]
    hooks = []

    def watch(mod, inp, out):
        for t in (out if isinstance(out, (tuple, list)) else (out,)):
            if torch.is_tensor(t) and t.is_floating_point() and t.numel():
                m = t.detach().abs().max().item()
                top[0] = max(top[0], m if m == m else float("inf"))

    for mod in model.modules():
        if not list(mod.children()):
            hooks.append(mod.register_forward_hook(watch))
    try:
        with torch.no_grad():
            model(*example)
    finally:
        for h in hooks:
            h.remove()
    return top[0]


def median_ms(fn, iters=20, warmup=5, device="cuda"):
    """Median ms of fn() over iters runs after warmup: from CUDA events
    around each call on the current stream, or the host's clock when device
    is "cpu"."""
    import torch
    if device == "cpu":
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(iters):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
        return float(np.median(times))
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return float(np.median(times))


def flatten_outputs(out):
    """A model's output (a tensor, or tuples, lists and dicts of them, in
    their order) as a flat list of tensors, as the exporters lay out graph
    outputs."""
    import torch
    if torch.is_tensor(out):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    flat = []
    for o in out:
        flat += flatten_outputs(o)
    return flat
