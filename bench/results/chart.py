#!/usr/bin/env python3
"""bench/results/chart.py - the README's chart of TPC-H per-query speed-ups.

Reads one TPC-H results file of bench/results (by default the newest
*-tpch-sf10-22-*.md by the date of its last commit), takes its table of
per-query native and gpuhash times (the columns whose headers start with
"native" and "gpuhash"), computes each query's speed-up from those two
numbers and draws them with gnuplot (Debian's gnuplot-nox) as bars on a
log scale, with the 1.0x line and the geometric mean, the GPU and the
commit in the title.

    python3 bench/results/chart.py                 # writes bench/results/tpch-speedup.png
    python3 bench/results/chart.py FILE.md [-o OUT.png] [--gpu NAME] [--commit HASH]

The GPU is read from the file's "NVIDIA <name>" and the commit from "the tree
that ran is <hash>" or, failing that, the first commit of its calls table;
--gpu and --commit name them where the file says them otherwise.
"""

import argparse
import glob
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def newest_results():
    """Returns the newest *-tpch-sf10-22-*.md of bench/results, by the date
    of the commit that last changed it (several share one day's date)."""
    files = glob.glob(os.path.join(HERE, "*-tpch-sf10-22-*.md"))
    if not files:
        sys.exit("no *-tpch-sf10-22-*.md in " + HERE)

    def stamp(path):
        try:
            out = subprocess.run(["git", "-C", HERE, "log", "-1", "--format=%ct", "--",
                                  os.path.basename(path)],
                                 capture_output=True, text=True, check=True).stdout.strip()
            return (int(out) if out else 0, os.path.getmtime(path))
        except (OSError, subprocess.CalledProcessError):
            return (0, os.path.getmtime(path))

    return max(files, key=stamp)


def parse(path):
    """Returns (rows, gpu, commit): rows a list of (query, native s,
    gpuhash s) in the table's order, a query marked * where the table
    says it ran decorrelated."""
    text = open(path, encoding="utf-8").read()
    rows = []
    header = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None if not rows else header
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "query":
            header = cells
            continue
        if header is None or set("".join(cells)) <= set("-: "):
            continue
        try:
            ni = next(i for i, h in enumerate(header) if h.startswith("native"))
            gi = next(i for i, h in enumerate(header) if h.startswith("gpuhash"))
        except StopIteration:
            continue
        m = re.match(r"Q\d+", cells[0])
        if not m:
            continue
        label = m.group(0) + ("*" if "decorrelated" in cells[0] else "")
        rows.append((label, float(cells[ni]), float(cells[gi])))
    if not rows:
        sys.exit("no table with 'query', 'native ...' and 'gpuhash ...' columns in " + path)
    gpu = re.search(r"NVIDIA ([A-Z][A-Za-z0-9-]+)", text)
    commit = (re.search(r"tree\s+(?:that\s+ran\s+)?is\s+([0-9a-f]{7,40})", text)
              or re.search(r"^\| *\d+ *\| *([0-9a-f]{7,40})\b", text, re.M))
    return rows, gpu.group(1) if gpu else None, commit.group(1) if commit else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="?", help="a TPC-H results file (default: the newest)")
    ap.add_argument("-o", "--output", default=os.path.join(HERE, "tpch-speedup.png"))
    ap.add_argument("--gpu")
    ap.add_argument("--commit")
    args = ap.parse_args()

    path = args.results or newest_results()
    rows, gpu, commit = parse(path)
    gpu = args.gpu or gpu
    commit = args.commit or commit
    if not gpu or not commit:
        sys.exit("%s names no %s: pass --gpu / --commit" % (path, "GPU" if not gpu else "commit"))
    speedups = [n / g for _, n, g in rows]
    geomean = math.exp(sum(math.log(s) for s in speedups) / len(speedups))

    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "speedup.dat")
        with open(data, "w") as f:
            for (q, n, g), s in zip(rows, speedups):
                # the label sits just past the bar's end, above or below 1x
                f.write('%s %.4f %.3f %.3f %.4f\n' % (q, s, n, g, s * 1.1 if s >= 1 else s / 1.1))
        ymax = max(speedups) * 1.6
        ymin = min(0.5, min(speedups) * 0.8)
        script = """
set terminal pngcairo size 1100,520 font "DejaVu Sans,11"
set output "{out}"
set title "TPC-H scale 10, 22 queries: PostgreSQL 15 time / gpuhash time (NVIDIA {gpu}, commit {commit})\\n{src}" noenhanced
set ylabel "speed-up (log scale)"
set logscale y
set yrange [{ymin}:{ymax}]
set ytics ("0.5x" 0.5, "1x" 1, "2x" 2, "4x" 4, "8x" 8, "16x" 16)
set grid ytics lc rgb "#dddddd"
set style fill solid 0.85 border -1
set xtics nomirror
set xrange [-0.7:{nq}-0.3]
set key top left
unset border
set border 3
plot "{data}" using 0:2:($0-0.35):($0+0.35):(1):2:xtic(1) with boxxyerror lc rgb "#4a7fb0" title "speed-up (native median / gpuhash median){star}", \\
     "" using 0:5:(sprintf("%.2f", $2)) with labels font ",9" notitle, \\
     1 with lines lw 2 dt 2 lc rgb "#c0392b" title "1.0x (as fast as PostgreSQL)", \\
     {geo} with lines lw 1 lc rgb "#555555" title "geometric mean {geo:.2f}x"
""".format(out=args.output, gpu=gpu, commit=commit, src="bench/results/" + os.path.basename(path),
           ymin=ymin, ymax=ymax, data=data, geo=geomean, nq=len(rows),
           star="; * decorrelated" if any(q.endswith("*") for q, _, _ in rows) else "")
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print("%s: %d queries from %s, geometric mean %.2fx" %
          (args.output, len(rows), os.path.basename(path), geomean))


if __name__ == "__main__":
    main()
