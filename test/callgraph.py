#!/usr/bin/env python3
"""
test/callgraph.py
    The file-level call graph of src/, from the built objects, and a check
    that no two files call each other through a circle.

A file calls another when its object file has an undefined reference to a
function the other defines (nm's "U" against the definer's "T").  Variables
(settings, shared state) are not calls and are left out.  Static functions
never cross a file, so the objects hold every edge the sources can make.

The one circle allowed is the one PostgreSQL's own nodeHash.c and
nodeHashjoin.c share (the table's build saves tuples through the batch
code), and only where the header admits it: ALLOWED lists it.

Usage:
    test/callgraph.py [--dot] [--edges] [--tap] [objdir]
It prints the circles found, the edges FORBIDDEN names and the calls that
go up a header's stated order of files, and exits 1 if there is one
(test/run.sh runs it with --tap, as its part "layering").
"""

import os
import subprocess
import sys
from collections import defaultdict

# The circles a header documents, as sets of file stems.
ALLOWED = [
    {"join_build", "join_batch"},
]

# Edges a header rules out, as (caller prefix, callee prefix, why):
# hashtable.c is the only join code that talks to the GPU service about its
# tables, and the aggregate and the join share only the files below both.
FORBIDDEN = [
    ("join_", "service_client", "only hashtable.c talks to the GPU service"),
    ("agg", "join_", "the aggregate does not call into the join"),
    ("join_", "agg", "the join does not call into the aggregate"),
]

# Layer orders the headers state, lowest first: a file may call only files
# listed before it (an ALLOWED circle excepted).  aggregate.h's list is read
# from the header itself, so the check follows the header; join_exec.h
# states its order in prose, written out here.
HEADER_ORDERS = ["aggregate.h"]
ORDERS = {
    "join_exec.h": ["join_parallel", "join_parts", "join_batch", "join_build",
                    "join_probe", "join_exec"],
}


def header_order(path):
    """The files aggregate.h lists after "lowest layer first", in order."""
    import re
    files = []
    inlist = False
    for line in open(path):
        if "lowest layer first" in line:
            inlist = True
            continue
        if inlist:
            if line.startswith("#") or "*/" in line:
                break
            m = re.match(r"^ \*\t([a-z_]+)\.c\t", line)
            if m:
                files.append(m.group(1))
    return files


def symbols(obj):
    out = subprocess.run(["nm", "--defined-only", obj], capture_output=True,
                         text=True, check=True).stdout
    defs = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "T":
            defs.add(parts[2])
    out = subprocess.run(["nm", "--undefined-only", obj], capture_output=True,
                         text=True, check=True).stdout
    refs = {line.split()[-1] for line in out.splitlines() if line.strip()}
    return defs, refs


def graph(objdir):
    objs = sorted(f for f in os.listdir(objdir) if f.endswith(".o"))
    if not objs:
        sys.exit("callgraph: no object files in %s: run make first" % objdir)
    definer = {}
    refs = {}
    for o in objs:
        stem = o[:-2]
        d, r = symbols(os.path.join(objdir, o))
        for s in d:
            definer[s] = stem
        refs[stem] = r
    edges = defaultdict(set)
    for stem, rs in refs.items():
        edges[stem]
        for s in rs:
            to = definer.get(s)
            if to and to != stem:
                edges[stem].add(to)
    return edges


def components(edges):
    """Tarjan's strongly connected components, iterative."""
    index = {}
    low = {}
    onstack = set()
    stack = []
    result = []
    counter = [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        onstack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    onstack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    advanced = True
                    break
                if nxt in onstack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = set()
                while True:
                    w = stack.pop()
                    onstack.discard(w)
                    comp.add(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    result.append(comp)
    return result


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    objdir = args[0] if args else os.path.join(os.path.dirname(__file__),
                                               "..", "src")
    edges = graph(objdir)
    if "--dot" in sys.argv:
        print("digraph src {")
        for f in sorted(edges):
            for t in sorted(edges[f]):
                print('  "%s" -> "%s";' % (f, t))
        print("}")
        return 0
    if "--edges" in sys.argv:
        for f in sorted(edges):
            print("%-20s -> %s" % (f, " ".join(sorted(edges[f]))))
    bad = 0
    for comp in components(edges):
        inner = {f: sorted(edges[f] & comp) for f in sorted(comp)}
        desc = "; ".join("%s -> %s" % (f, ", ".join(t)) for f, t in inner.items())
        if comp in ALLOWED:
            print("allowed circle: %s" % desc)
        else:
            print("CIRCLE: %s" % desc)
            bad += 1
    for prefix, callee, why in FORBIDDEN:
        for f in sorted(edges):
            for t in sorted(edges[f]):
                if f.startswith(prefix) and t.startswith(callee):
                    print("FORBIDDEN: %s -> %s (%s)" % (f, t, why))
                    bad += 1
    srcdir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    orders = dict(ORDERS)
    for h in HEADER_ORDERS:
        orders[h] = header_order(os.path.join(srcdir, h))
        if len(orders[h]) < 2:
            print("ORDER: no file list found in %s" % h)
            bad += 1
    for h, order in sorted(orders.items()):
        pos = {f: i for i, f in enumerate(order)}
        for f in order:
            for t in sorted(edges.get(f, ())):
                if t in pos and pos[t] > pos[f] and {f, t} not in ALLOWED:
                    print("ORDER: %s calls %s, listed after it in %s" % (f, t, h))
                    bad += 1
    print("%d files, %d edges, %d circle(s) or edge(s) not allowed"
          % (len(edges), sum(len(v) for v in edges.values()), bad))
    if "--tap" in sys.argv:
        print("1..1")
        print("%sok 1 - src/'s call graph keeps the layering its headers state"
              % ("not " if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
