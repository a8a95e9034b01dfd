#!/usr/bin/env python3
"""test/readme_samples.py - the README's SQL samples and settings reference
checked against a running server, as TAP.

Every SQL sample in README.md is a marked block that this script runs:

    <!-- sample-setup: NAME -->      a ```sql block run as it is (it must
                                     succeed); its output is not shown
    <!-- sample: NAME -->            a ``` block of statements, each written
                                     "=# " then "-# " for its further lines,
                                     each followed by psql's output

The blocks run in the README's order in one database (gpuhash_readme, made
afresh), each in a session of its own, so a block's SETs end with it.
Numbers that change from run to run (times in ms, memory in kB) are masked
as "..." on both sides before they are compared, and so are the widths of
psql's rules and of the centred "QUERY PLAN" header that they set; a sample may name more to
mask with mask="REGEX" in its marker (e.g. a DETAIL that names the host's
CUDA error).  The settings reference (table rows whose first cell is a
gpuhash setting and that have seven cells) must list every gpuhash setting
pg_settings shows, with its vartype, boot_val, unit, context and, as its
description, short_desc and extra_desc exactly.

    python3 test/readme_samples.py            check; TAP on stdout, exit 1 on a difference
    python3 test/readme_samples.py --update   rewrite the README's sample blocks and the
                                              settings' generated cells from this server

It connects with psql and the PG* environment: test/readme_samples.sh
starts the cluster it is meant for (the CPU twin, planning with the GPU's
cost model, no GPU visible, serial plans).
"""

import argparse
import difflib
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DB = "gpuhash_readme"

MARKER = re.compile(r'^<!-- (sample|sample-setup): ([\w-]+)((?: [a-z]+="[^"]*")*) -->$')
OPTION = re.compile(r'([a-z]+)="([^"]*)"')
# run-dependent numbers: durations and memory sizes
MASKS = [(re.compile(r'\b\d+(\.\d+)? ms\b'), '... ms'),
         (re.compile(r'\b\d+ ?kB\b'), '... kB')]
SETTING_ROW = re.compile(r'^\| `(gpuhash\.[a-z_]+)` \|')


def psql(args, stdin=None, db=DB, check=True):
    """Runs psql with args; returns its stdout and stderr together."""
    cmd = ["psql", "-X", "-q", "-d", db, "-v", "VERBOSITY=default"] + args
    p = subprocess.run(cmd, input=stdin, capture_output=False, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if check and p.returncode != 0:
        raise RuntimeError("psql failed (%d): %s" % (p.returncode, p.stdout.strip()))
    return p.stdout


def mask(text, extra):
    """Replaces the run-dependent parts of text by '...'."""
    for rx, rep in MASKS:
        text = rx.sub(rep, text)
    for rx in extra:
        text = rx.sub(mask_match, text)
    return text


def layout(line):
    """A line as compared: psql sizes a table to its widest line, which a
    masked number may have been, so rules and centred headers are compared
    without their width."""
    if re.fullmatch(r'[-+]+', line):
        return "-"
    return line.strip() if re.fullmatch(r' *QUERY PLAN *', line) else line


def mask_match(m):
    """Replaces a sample's own mask: its first group, or all of it."""
    if not m.groups() or m.start(1) < 0:
        return "..."
    whole = m.group(0)
    return whole[:m.start(1) - m.start(0)] + "..." + whole[m.end(1) - m.start(0):]


def find_blocks(lines):
    """Returns the marked blocks: dicts of kind, name, options, and the line
    indexes of the fence's body [start, end)."""
    blocks = []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            k = j + 1
            while k < len(lines) and lines[k] != "```":
                k += 1
            if j >= len(lines) or k >= len(lines):
                raise SystemExit("README.md:%d: marker without a fenced block" % (i + 1))
            blocks.append({"kind": m.group(1), "name": m.group(2),
                           "options": dict(OPTION.findall(m.group(3))),
                           "line": i + 1, "start": j + 1, "end": k})
            i = k
        i += 1
    return blocks


def statements(body):
    """Splits a sample's body into its statements (without prompts)."""
    stmts = []
    for line in body:
        if line.startswith("=# "):
            stmts.append([line[3:]])
        elif line.startswith("-# ") and stmts and not stmts[-1][-1].rstrip().endswith(";"):
            stmts[-1].append(line[3:])
    return ["\n".join(s) for s in stmts]


def run_sample(stmts):
    """Runs a sample's statements in one session; returns the block's body
    as the README writes it: each statement with its prompts, then psql's
    output with trailing blanks removed, a blank line after any output."""
    args = []
    for n, s in enumerate(stmts):
        args += ["-c", "\\echo @@%d@@" % n, "-c", s]
    out = psql(args, check=False)
    parts = re.split(r'^@@\d+@@\n', out, flags=re.M)[1:]
    if len(parts) != len(stmts):
        return ["(psql did not run every statement)"] + out.splitlines()
    body = []
    for s, o in zip(stmts, parts):
        if body and body[-1][:3] not in ("=# ", "-# "):
            body.append("")
        slines = s.split("\n")
        body.append("=# " + slines[0])
        body += ["-# " + x for x in slines[1:]]
        olines = [x.rstrip() for x in o.split("\n")]
        while olines and olines[-1] == "":
            olines.pop()
        body += olines
    return body


def setting_rows():
    """pg_settings' gpuhash settings: name -> the generated cells."""
    out = psql(["-A", "-t", "-F", "\x1f", "-c",
                "SELECT name, vartype, boot_val, coalesce(unit, ''), context, "
                "short_desc, coalesce(extra_desc, '') FROM pg_settings "
                "WHERE name LIKE 'gpuhash.%' ORDER BY name"])
    rows = {}
    for line in out.splitlines():
        name, vartype, boot, unit, context, short, extra = line.split("\x1f")
        desc = (short + " " + extra).strip()
        rows[name] = [vartype, "`%s`" % boot, unit, context, desc.replace("|", "\\|")]
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--update", action="store_true",
                    help="rewrite README.md's samples and settings cells from this server")
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    args = ap.parse_args()

    text = open(args.readme, encoding="utf-8").read()
    lines = text.split("\n")
    blocks = find_blocks(lines)
    psql(["-c", "DROP DATABASE IF EXISTS " + DB, "-c", "CREATE DATABASE " + DB], db="postgres")

    results = []						# (ok, name, diagnostics)
    replace = {}						# start line -> (end, new body)
    for b in blocks:
        body = lines[b["start"]:b["end"]]
        label = "README.md:%d %s %s" % (b["line"], b["kind"], b["name"])
        if b["kind"] == "sample-setup":
            try:
                psql(["-v", "ON_ERROR_STOP=1"], stdin="\n".join(body) + "\n")
                results.append((True, label, []))
            except RuntimeError as e:
                results.append((False, label, [str(e)]))
            continue
        stmts = statements(body)
        if not stmts:
            results.append((False, label, ["no statement (lines starting with '=# ')"]))
            continue
        extra = [re.compile(b["options"]["mask"])] if "mask" in b["options"] else []
        got = [mask(x, extra) for x in run_sample(stmts)]
        want = [mask(x.rstrip(), extra) for x in body]
        if [layout(x) for x in got] == [layout(x) for x in want]:
            results.append((True, label, []))
        else:
            diff = list(difflib.unified_diff(want, got, "README.md", "server", lineterm="", n=2))
            results.append((False, label, diff))
            replace[b["start"]] = (b["end"], got)

    # the settings reference
    server = setting_rows()
    seen = set()
    problems = []
    for i, line in enumerate(lines):
        m = SETTING_ROW.match(line)
        if not m:
            continue
        cells = [c.strip() for c in re.split(r'(?<!\\)\|', line.strip())[1:-1]]
        if len(cells) != 7:
            continue
        name = m.group(1)
        seen.add(name)
        if name not in server:
            problems.append("README.md:%d: %s is no setting of this server" % (i + 1, name))
            continue
        if cells[1:6] != server[name]:
            problems.append("README.md:%d: %s" % (i + 1, name))
            for h, a, b in zip(("type", "default", "unit", "set by", "description"),
                               cells[1:6], server[name]):
                if a != b:
                    problems.append("  %s: README %r, pg_settings %r" % (h, a, b))
            lines[i] = "| `%s` | %s | %s |" % (name, " | ".join(server[name]), cells[6])
    for name in sorted(set(server) - seen):
        problems.append("%s is in pg_settings but not in the README's settings reference" % name)
    results.append((not problems, "README.md's settings reference matches pg_settings", problems))

    if args.update:
        for start in sorted(replace, reverse=True):
            end, new = replace[start]
            lines[start:end] = new
        new_text = "\n".join(lines)
        if new_text != text:
            with open(args.readme, "w", encoding="utf-8") as f:
                f.write(new_text)
        for ok, label, diag in results:
            print("%s %s" % ("same   " if ok else "updated", label))
        left = [p for p in problems if "not in the README" in p or "no setting" in p]
        for p in left:
            print("left for you: " + p)
        return 1 if left else 0

    print("1..%d" % len(results))
    for n, (ok, label, diag) in enumerate(results, 1):
        print("%s %d - %s" % ("ok" if ok else "not ok", n, label))
        for d in diag[:80]:
            print("# " + d)
    if not all(ok for ok, _, _ in results):
        print("# python3 test/readme_samples.py --update (under test/readme_samples.sh) "
              "rewrites the README from the server, if the change is intended")
    return 0 if all(ok for ok, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
