#!/usr/bin/env python3
"""
callgraph.py — the file-level call graph of cudaep, derived from the
object files, and a check that it has no cycle.

Each object file under OBJ_DIR (the build's obj/ folder) is one source
file. `nm` lists the global symbols a file defines and the ones it leaves
undefined; a file that leaves undefined a symbol another file defines
depends on that file (a call, or a reference to its data). A set of two or
more files that reach one another through such edges is a cycle: one
concept split badly, or two concepts tangled (docs/ARCHITECTURE.md).

    tests/callgraph.py build/obj             fail (exit 1) on a cycle
    tests/callgraph.py build/obj --report    also print every cycle, the
                                             edges inside it and the
                                             largest files' line counts

Only the project's own folders are checked (CHECKED below); generated
code and the tests are not.
"""
import argparse
import os
import subprocess
import sys

CHECKED = ("common", "daemon", "engine", "gpu", "alloc", "kernels", "client",
           "tools")
GLOBAL_DEFINED = set("TDBRCVWGSI")


TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def objects(obj_dir):
    for root, _dirs, files in os.walk(obj_dir):
        for f in sorted(files):
            if not f.endswith(".o"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, obj_dir)[:-2]
            # An object whose source is gone (a build from before a file
            # was split or removed) is not part of the code any more.
            if rel.split(os.sep)[0] in CHECKED and \
                    os.path.exists(os.path.join(TOP, rel + ".c")):
                yield rel, path


def symbols(path):
    out = subprocess.run(["nm", "--defined-only", "-g", path],
                         check=True, capture_output=True, text=True).stdout
    defined = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in GLOBAL_DEFINED:
            defined.add(parts[2])
    out = subprocess.run(["nm", "-u", path], check=True,
                         capture_output=True, text=True).stdout
    undefined = {line.split()[-1] for line in out.splitlines() if line.strip()}
    return defined, undefined


def graph(obj_dir):
    files = dict(objects(obj_dir))
    if not files:
        sys.exit(f"callgraph: no object files of {', '.join(CHECKED)} "
                 f"under {obj_dir}")
    owner, uses = {}, {}
    for name, path in files.items():
        defined, undefined = symbols(path)
        for s in defined:
            owner.setdefault(s, name)
        uses[name] = undefined
    edges = {name: {} for name in files}
    for name, undefined in uses.items():
        for s in undefined:
            to = owner.get(s)
            if to is not None and to != name:
                edges[name].setdefault(to, []).append(s)
    return edges


def cycles(edges):
    """Tarjan's strongly connected components of two or more files."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        # An explicit stack: the graph is small, but recursion limits are
        # not a property worth depending on.
        work = [(v, iter(sorted(edges[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out, key=lambda c: (-len(c), c))


def largest_sources(top, n=10):
    sizes = []
    for folder in CHECKED:
        d = os.path.join(top, folder)
        for root, _dirs, files in os.walk(d):
            for f in files:
                if f.endswith((".c", ".h", ".cu", ".cuh")):
                    p = os.path.join(root, f)
                    with open(p, "rb") as fh:
                        sizes.append((fh.read().count(b"\n"),
                                      os.path.relpath(p, top)))
    return sorted(sizes, reverse=True)[:n]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("obj_dir")
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args()
    edges = graph(args.obj_dir)
    found = cycles(edges)
    n_edges = sum(len(e) for e in edges.values())
    print(f"callgraph: {len(edges)} files, {n_edges} file-to-file edges, "
          f"{len(found)} cycle(s)")
    for comp in found:
        print(f"  cycle of {len(comp)}: {' '.join(comp)}")
        members = set(comp)
        for a in comp:
            for b in sorted(edges[a]):
                if b in members:
                    syms = sorted(edges[a][b])
                    more = f" (+{len(syms) - 3})" if len(syms) > 3 else ""
                    print(f"    {a} -> {b}: {', '.join(syms[:3])}{more}")
    if args.report:
        print("largest source files:")
        for lines, path in largest_sources(TOP):
            print(f"  {lines:6d} {path}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
