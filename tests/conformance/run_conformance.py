#!/usr/bin/env python3
"""Runs the ONNX backend node conformance cases through cudaepd.

Every case written by gen_cases.py (model.onnx, test_data_set_N/*.pb,
tolerance.txt) is loaded into a session of a real daemon through the Python
client, run on each data set and compared with the expected outputs (the
case's rtol/atol). A case is

    PASS  every output of every data set matches,
    FAIL  a mismatch, or an error other than "unsupported",
    SKIP  cudaep refuses it as unsupported (an operator, opset, attribute
          or element type; the reason is printed), or its data are not
          tensors of a type the Python client holds (cudaep.DTYPES, bfloat16
          among them as ml_dtypes.bfloat16).

It prints a per-operator table of pass/fail/skip counts and, last,
`conformance: N passed, M failed, K skipped`. With --expected FILE, a list
of case names expected to pass, any of those that does not pass is a
regression and the exit status is 1; a FAIL of a case not on the list is
reported but not fatal (its operator is still being built). --update
rewrites FILE with the cases that pass now, and --rest FILE2 (with
--update) lists every case that does not pass, with its result and why.

    run_conformance.py CASES_DIR [--socket PATH] [--backend host|cuda]
                       [--filter S] [--expected FILE [--update [--rest FILE2]]]
                       [--verbose]

Without --socket it starts its own cudaepd ($CUDAEP_BUILD_DIR/bin/cudaepd)
on the given backend (default host).
"""
import argparse
import collections
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import cudaep  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

UNSUPPORTED = -4003  # CEP_EUNSUPPORTED


def start_daemon(build, backend):
    d = tempfile.mkdtemp(prefix="cep-conf-")
    sock = os.path.join(d, "cudaep.sock")
    log = open(os.path.join(d, "daemon.log"), "wb")
    proc = subprocess.Popen([os.path.join(build, "bin", "cudaepd"), "--socket", sock,
                             "--log-level", "warning", "--backend", backend],
                            stdout=log, stderr=log)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        if proc.poll() is not None:
            sys.exit("run_conformance: cudaepd exited with %d" % proc.returncode)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(sock)
            return proc, sock, d
        except OSError:
            time.sleep(0.02)
        finally:
            s.close()
    proc.kill()
    sys.exit("run_conformance: cudaepd did not start")


def op_label(case, model):
    """The operator a case is about: the graph's op whose name matches the
    case name best, else its first op."""
    name = case[len("test_"):].replace("_", "").lower()
    ops = [n.op_type for n in model.graph.node]
    best = None
    for op in ops:
        if name.startswith(op.lower()) and (best is None or len(op) > len(best)):
            best = op
    label = best or (ops[0] if ops else "?")
    return label + (" (expanded)" if "_expanded" in case else "")


def read_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def data_sets(case_dir):
    n = 0
    while os.path.isdir(os.path.join(case_dir, "test_data_set_%d" % n)):
        ds = os.path.join(case_dir, "test_data_set_%d" % n)
        ins, outs, k = [], [], 0
        while os.path.exists(os.path.join(ds, "input_%d.pb" % k)):
            ins.append(read_tensor(os.path.join(ds, "input_%d.pb" % k)))
            k += 1
        k = 0
        while os.path.exists(os.path.join(ds, "output_%d.pb" % k)):
            outs.append(read_tensor(os.path.join(ds, "output_%d.pb" % k)))
            k += 1
        yield ins, outs
        n += 1


def compare(name, got, want, rtol, atol):
    if got.dtype != want.dtype:
        return "output %r is %s, expected %s" % (name, got.dtype, want.dtype)
    if got.shape != want.shape:
        return "output %r has shape %s, expected %s" % (name, got.shape, want.shape)
    if want.dtype.name == "bfloat16" or want.dtype.name.startswith("float8"):
        # ml_dtypes' bfloat16 and float8 types (kind "V"): compared as the
        # float32 values they hold exactly, with the case's tolerance.
        ok = np.isclose(got.astype(np.float32), want.astype(np.float32), rtol=rtol, atol=atol,
                        equal_nan=True)
    elif want.dtype.kind in "fc":
        ok = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        ok = got == want
    if not np.all(ok):
        i = np.argwhere(~ok)[0]
        return "output %r at %s is %r, expected %r" % (
            name, tuple(int(v) for v in i), got[tuple(i)], want[tuple(i)])
    return None


def run_case(client, case_dir, case):
    """Returns (result, reason, op label)."""
    model_path = os.path.join(case_dir, "model.onnx")
    model = onnx.load(model_path, load_external_data=False)
    label = op_label(case, model)
    skip = os.path.join(case_dir, "SKIP")
    if os.path.exists(skip):
        return "SKIP", open(skip).read().strip(), label
    rtol, atol = 1e-3, 1e-5
    tol = os.path.join(case_dir, "tolerance.txt")
    if os.path.exists(tol):
        rtol, atol = (float(v) for v in open(tol).read().split())
    try:
        sess = client.load(model_path, name=case[:63])
    except cudaep.Error as e:
        if e.code == UNSUPPORTED:
            return "SKIP", e.detail, label
        return "FAIL", "load: %s" % e, label
    try:
        in_names = [i.name for i in sess.inputs]
        out_names = [o.name for o in sess.outputs]
        for ins, outs in data_sets(case_dir):
            for a in ins:
                if not isinstance(a, np.ndarray) or np.dtype(a.dtype) not in cudaep.DTYPES:
                    return "SKIP", "input of type %s" % getattr(a, "dtype", type(a)), label
            try:
                got = sess.run(dict(zip(in_names, ins)))
            except cudaep.Error as e:
                if e.code == UNSUPPORTED:
                    return "SKIP", e.detail, label
                return "FAIL", "run: %s" % e, label
            for name, want in zip(out_names, outs):
                why = compare(name, got[name], want, rtol, atol)
                if why:
                    return "FAIL", why, label
        return "PASS", "", label
    finally:
        sess.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases")
    ap.add_argument("--socket")
    ap.add_argument("--filter", default="")
    ap.add_argument("--expected")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--rest", help="with --update: write every case that does not pass, "
                    "with its result and reason, here")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--backend", default="host", choices=["host", "cuda", "auto"],
                    help="the backend of the daemon this starts (default host)")
    args = ap.parse_args()

    build = os.environ.get("CUDAEP_BUILD_DIR") or os.path.join(HERE, "..", "..", "build")
    proc = tmp = None
    sock = args.socket
    if sock is None:
        proc, sock, tmp = start_daemon(build, args.backend)
    results = {}
    whys = {}
    per_op = collections.defaultdict(collections.Counter)
    reasons = collections.Counter()
    try:
        client = cudaep.connect(sock, name="conformance")
        for case in sorted(os.listdir(args.cases)):
            if args.filter not in case or case.startswith(".") or \
                    not os.path.isdir(os.path.join(args.cases, case)):
                continue
            res, why, label = run_case(client, os.path.join(args.cases, case), case)
            results[case] = res
            whys[case] = why
            per_op[label][res] += 1
            if res == "SKIP":
                reasons[why.split(":")[0] if why.startswith("node ") else why] += 1
            if res == "FAIL" or args.verbose:
                print("%s %s%s" % (res, case, ": " + why if why else ""))
        client.close()
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=30)
            if rc != 0:
                print("run_conformance: cudaepd exited with %d" % rc)
                results["(daemon exit)"] = "FAIL"

    print("\n%-34s %6s %6s %6s" % ("operator", "pass", "fail", "skip"))
    for label in sorted(per_op):
        c = per_op[label]
        print("%-34s %6d %6d %6d" % (label, c["PASS"], c["FAIL"], c["SKIP"]))
    if args.verbose:
        print("\nskip reasons:")
        for why, n in reasons.most_common():
            print("%6d  %s" % (n, why))

    status = 0
    if args.expected:
        if args.update:
            with open(args.expected, "w") as f:
                f.write("# Node conformance cases expected to pass through cudaepd on the host\n"
                        "# backend; any of them that stops passing fails `make test`.\n"
                        "# Regenerate: make conformance-update\n")
                for case in sorted(c for c, r in results.items() if r == "PASS"):
                    f.write(case + "\n")
            if args.rest:
                with open(args.rest, "w") as f:
                    f.write("# Node conformance cases that do not pass through cudaepd on the host\n"
                            "# backend, each with its result and why (one line each: the case,\n"
                            "# FAIL or SKIP, the reason, separated by tabs). Regenerate: make conformance-update\n")
                    for case in sorted(c for c, r in results.items() if r != "PASS"):
                        why = " ".join(whys.get(case, "").split())
                        f.write("%s\t%s\t%s\n" % (case, results[case], why))
        else:
            want = [l.strip() for l in open(args.expected) if l.strip() and not l.startswith("#")]
            want = [c for c in want if args.filter in c]
            lost = [c for c in want if results.get(c) != "PASS"]
            new = [c for c, r in results.items() if r == "PASS" and c not in set(want)]
            for c in lost:
                print("REGRESSION %s: %s" % (c, results.get(c, "missing")))
            if new:
                print("%d cases pass that are not on %s (make conformance-update adds them)"
                      % (len(new), os.path.basename(args.expected)))
            status = 1 if lost else 0
    counts = collections.Counter(results.values())
    print("conformance: %d passed, %d failed, %d skipped"
          % (counts["PASS"], counts["FAIL"], counts["SKIP"]))
    return status


if __name__ == "__main__":
    sys.exit(main())
