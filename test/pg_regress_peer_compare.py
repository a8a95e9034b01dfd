#!/usr/bin/env python3
"""test/pg_regress_peer_compare.py - compare two runs of PostgreSQL's own
regression suite statement by statement (used by test/pg_regress_peer.sh).

    pg_regress_peer_compare.py --sql DIR --schedule FILE \
        --a NAME=RESULTSDIR --b NAME=RESULTSDIR [--report FILE] [--diffs FILE]

pg_regress runs psql with -a: a results file is the test's SQL file echoed
line by line with each statement's output inserted after the line that ends
it.  GNU diff aligns the SQL file with each results file; the lines only in
the results file are output, and each run of them belongs to the echoed
lines before it (a "unit": the statements since the previous output and the
output they produced).  The units of run A and run B are matched by their
position in the SQL file and compared:

  identical    the outputs are equal
  plan         the unit runs EXPLAIN (or a function whose body does):
               its output may differ, but not in ERROR/FATAL/PANIC/WARNING
               lines, a lost connection, nor (EXPLAIN ANALYZE) in the rows
               and loops of the root node
  row order    the outputs are equal as multisets of lines and the statement
               has no ORDER BY at its top level
  limit rows   the statement has LIMIT/FETCH FIRST/OFFSET (or is a FETCH from
               a cursor) without a top-level ORDER BY: which rows come back
               is the plan's choice; the rows differ but the row count and
               the column headers are the same
  DIFFERENT    anything else

A test passes when none of its units is DIFFERENT and both runs produced a
results file.  Tests on an "ignore:" line of the schedule are reported but
not counted as failures.
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

ERRORISH = re.compile(r'^(ERROR|FATAL|PANIC|WARNING):|server closed the connection|'
                      r'terminating connection because of crash|connection to server was lost|'
                      r'no connection to the server')


# --------------------------------------------------------------- SQL lexing

def closing_quote(text, i, q, backslash):
    """Index of the quote q that closes a literal or identifier whose text
    starts at i (a doubled quote stands for itself; with backslash, as in
    E'...', a backslash escapes the next character); len(text) if none."""
    n = len(text)
    while i < n:
        if backslash and text[i] == '\\':
            i += 2
            continue
        if text[i] == q:
            if i + 1 < n and text[i + 1] == q:
                i += 2
                continue
            return i
        i += 1
    return n


def strip_sql(text):
    """text with comments removed and string/identifier literals and
    dollar-quoted bodies replaced by placeholders; returns (code, depth)
    where depth[i] is the parenthesis depth of code[i]"""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('--', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
            continue
        if text.startswith('/*', i):
            depth = 1
            i += 2
            while i < n and depth:
                if text.startswith('/*', i):
                    depth += 1
                    i += 2
                elif text.startswith('*/', i):
                    depth -= 1
                    i += 2
                else:
                    i += 1
            out.append(' ')
            continue
        if c == "'":
            esc = i > 0 and text[i - 1] in 'eE' and (i < 2 or not (text[i - 2].isalnum() or text[i - 2] == '_'))
            i = closing_quote(text, i + 1, "'", esc) + 1
            out.append("''")
            continue
        if c == '"':
            j = closing_quote(text, i + 1, '"', False)
            out.append('"' + text[i + 1:j] + '"')
            i = j + 1
            continue
        if c == '$':
            m = re.match(r'\$([A-Za-z_][A-Za-z_0-9]*)?\$', text[i:])
            if m and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == '_')):
                tag = m.group(0)
                j = text.find(tag, i + len(tag))
                body = text[i + len(tag):(n if j < 0 else j)]
                out.append('$$' + body + '$$')  # keep bodies: EXPLAIN inside a function
                i = n if j < 0 else j + len(tag)
                continue
        out.append(c)
        i += 1
    return ''.join(out)


def split_statements(text):
    """SQL text (comments stripped) split at top-level semicolons and psql
    meta-commands (a backslash outside quotes ends the statement)"""
    code = strip_sql(text)
    stmts, cur, depth = [], [], 0
    i = 0
    while i < len(code):
        c = code[i]
        if c == '$' and code.startswith('$$', i):
            j = code.find('$$', i + 2)
            j = len(code) if j < 0 else j + 2
            cur.append(code[i:j])
            i = j
            continue
        if c == "'" and code.startswith("''", i):
            cur.append("''")
            i += 2
            continue
        if c == '(':
            depth += 1
        elif c == ')':
            depth = max(0, depth - 1)
        if c == ';' and depth == 0:
            stmts.append(''.join(cur))
            cur = []
        elif c == '\\':
            # a meta-command: to the end of the line
            stmts.append(''.join(cur))
            j = code.find('\n', i)
            j = len(code) if j < 0 else j
            stmts.append(code[i:j])
            cur = []
            i = j
            continue
        else:
            cur.append(c)
        i += 1
    stmts.append(''.join(cur))
    return [s.strip() for s in stmts if s.strip()]


def top_level(stmt):
    """the statement with everything inside parentheses and dollar quotes
    removed"""
    out, depth, i = [], 0, 0
    while i < len(stmt):
        if stmt.startswith('$$', i):
            j = stmt.find('$$', i + 2)
            i = len(stmt) if j < 0 else j + 2
            continue
        c = stmt[i]
        if c == '(':
            depth += 1
        elif c == ')':
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(c)
        i += 1
    return ''.join(out)


def has_order_by(stmt):
    return re.search(r'\border\s+by\b', top_level(stmt), re.I) is not None


def has_limit(stmt):
    t = top_level(stmt)
    return (re.search(r'\b(limit|offset)\b|\bfetch\s+(first|next)\b', t, re.I) is not None
            or re.match(r'\s*fetch\b', t, re.I) is not None)


def plan_functions(sql_dir):
    """names of functions, defined in any test, whose body runs EXPLAIN"""
    names = set()
    for f in os.listdir(sql_dir):
        if not f.endswith('.sql'):
            continue
        with open(os.path.join(sql_dir, f), errors='replace') as fh:
            text = fh.read()
        for st in split_statements(text):
            m = re.match(r'create\s+(?:or\s+replace\s+)?function\s+(?:[\w"]+\.)?"?(\w+)"?', st, re.I)
            if m and re.search(r'\bexplain\b', st, re.I):
                names.add(m.group(1).lower())
    return names


# ------------------------------------------------------------- unit parsing

def units(sql_file, out_file):
    """{anchor: output lines}, echoed lines; anchor = number of echoed SQL
    lines before the output"""
    # empty lines are left out on both sides: the SQL's blank lines and the
    # blank line psql prints after a result table (but not after an ERROR)
    # would otherwise be matched with one another in different ways in two
    # results files
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for f in (sql_file, out_file):
            g = os.path.join(tmp, os.path.basename(f) + ('.sql' if not files else '.out'))
            with open(f, 'rb') as src, open(g, 'wb') as dst:
                dst.writelines(l for l in src if l.strip(b'\r\n'))
            files.append(g)
        r = subprocess.run(['diff', '-d', '--unchanged-line-format= %L', '--old-line-format=-%L',
                            '--new-line-format=+%L'] + files,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode > 1:
        raise RuntimeError(r.stderr.decode(errors='replace'))
    echoed, blocks = [], collections.OrderedDict()
    for raw in r.stdout.decode('utf-8', errors='replace').split('\n'):
        if not raw:
            continue
        tag, line = raw[0], raw[1:]
        if tag == ' ':
            echoed.append(line)
        elif tag == '+':
            blocks.setdefault(len(echoed), []).append(line)
    # a block of blank lines only is the echo's blank line matched elsewhere
    out = collections.OrderedDict()
    for k, lines in blocks.items():
        while lines and not lines[0].strip():
            lines = lines[1:]
        while lines and not lines[-1].strip():
            lines = lines[:-1]
        if lines:
            out[k] = lines
    return out, echoed


def unified(a, b, name_a, name_b):
    import difflib
    return list(difflib.unified_diff(a, b, name_a, name_b, n=2, lineterm=''))


def root_rows(lines):
    """the rows EXPLAIN ANALYZE counted at its first (root) node, if any:
    the plans may differ, the rows the query returns may not"""
    for l in lines:
        m = re.search(r'\(actual (?:time=\S+ )?rows=(\S+) loops=(\S+)\)', l)
        if m:
            return m.groups()
    return None


RANK = {'identical': 0, 'plan': 1, 'row order': 2, 'limit rows': 3, 'DIFFERENT': 4}


def compare_test(test, sql_dir, dir_a, dir_b, name_a, name_b, planfns):
    """(verdict, [(kind, sql, diff lines)])"""
    sql_file = os.path.join(sql_dir, test + '.sql')
    fa = os.path.join(dir_a, test + '.out')
    fb = os.path.join(dir_b, test + '.out')
    missing = [n for n, f in ((name_a, fa), (name_b, fb)) if not os.path.exists(f)]
    if missing:
        return 'DIFFERENT', [('DIFFERENT', '', ['no results file in the %s run' % ', '.join(missing)])]
    with open(fa, 'rb') as x, open(fb, 'rb') as y:
        if x.read() == y.read():
            return 'identical', []
    ua, echo_a = units(sql_file, fa)
    ub, echo_b = units(sql_file, fb)
    findings = []
    if echo_a != echo_b:
        # the echo itself differs (a run stopped early, psql lost the
        # connection): compare what we can, and flag the test
        findings.append(('DIFFERENT', '', ['the echoed SQL differs: %d lines in %s, %d in %s'
                                          % (len(echo_a), name_a, len(echo_b), name_b)]))
    echo = echo_a if len(echo_a) >= len(echo_b) else echo_b
    anchors = sorted(set(ua) | set(ub))
    prev = 0
    planre = None
    if planfns:
        planre = re.compile(r'\b(' + '|'.join(sorted(map(re.escape, planfns))) + r')\s*\(', re.I)
    for k in anchors:
        sql = '\n'.join(echo[prev:k])
        prev = k
        a, b = ua.get(k, []), ub.get(k, [])
        if a == b:
            continue
        stmts = [s for s in split_statements(sql) if not s.startswith('\\')]
        code = '\n'.join(stmts)
        last = stmts[-1] if stmts else ''
        diff = unified(a, b, name_a, name_b)
        err_a = [l for l in a if ERRORISH.search(l)]
        err_b = [l for l in b if ERRORISH.search(l)]
        is_plan = bool(re.search(r'\bexplain\b', code, re.I) or (planre and planre.search(code)))
        if is_plan and err_a == err_b and root_rows(a) == root_rows(b):
            kind = 'plan'
        elif err_a != err_b:
            kind = 'DIFFERENT'
        elif sorted(a) == sorted(b) and not has_order_by(last):
            kind = 'row order'
        elif (has_limit(last) and not has_order_by(last) and len(a) == len(b)
              and a[:2] == b[:2] and a[-1:] == b[-1:]):
            kind = 'limit rows'
        else:
            kind = 'DIFFERENT'
        findings.append((kind, sql.strip(), diff))
    verdict = max([f[0] for f in findings] or ['identical'], key=RANK.get)
    if verdict == 'identical':
        # bytes differ but no unit does (blank lines placed differently)
        verdict = 'row order'
    return verdict, findings


def schedule_tests(path):
    tests, ignored = [], set()
    with open(path) as fh:
        for line in fh:
            m = re.match(r'\s*(test|ignore):\s*(.*)', line)
            if not m:
                continue
            if m.group(1) == 'ignore':
                ignored.update(m.group(2).split())
            else:
                tests.extend(m.group(2).split())
    return tests, ignored


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sql', required=True, help='the suite\'s sql/ directory')
    ap.add_argument('--schedule', required=True)
    ap.add_argument('--a', required=True, help='NAME=results dir')
    ap.add_argument('--b', required=True, help='NAME=results dir')
    ap.add_argument('--diffs', help='write every difference here')
    ap.add_argument('--failed-extra', default='', help='tests to fail whatever their output (crash, hang)')
    ap.add_argument('--show', type=int, default=60, help='diff lines to print per DIFFERENT unit')
    args = ap.parse_args()
    name_a, dir_a = args.a.split('=', 1)
    name_b, dir_b = args.b.split('=', 1)
    tests, ignored = schedule_tests(args.schedule)
    extra = {}
    for x in args.failed_extra.split(','):
        if '=' in x:
            t, why = x.split('=', 1)
            extra[t] = extra[t] + '; ' + why if t in extra else why
    planfns = plan_functions(args.sql)
    passed = failed = 0
    counts = collections.Counter()
    dfh = open(args.diffs, 'w') if args.diffs else None
    words = {'identical': 'identical', 'plan': 'plans only', 'row order': 'row order only',
             'limit rows': 'rows of an unordered LIMIT', 'DIFFERENT': 'DIFFERENT'}
    for t in tests:
        verdict, findings = compare_test(t, args.sql, dir_a, dir_b, name_a, name_b, planfns)
        kinds = sorted({f[0] for f in findings if f[0] != 'DIFFERENT'}, key=RANK.get)
        label = words[verdict]
        if verdict not in ('identical', 'DIFFERENT') and len(kinds) > 1:
            label = ' + '.join(words[k] for k in kinds)
        if t in extra:
            verdict, label = 'DIFFERENT', 'DIFFERENT (%s)' % extra[t]
        note = ''
        if t in ignored:
            note = ' (ignored by the schedule)'
        counts[verdict] += 1
        nplan = sum(1 for f in findings if f[0] == 'plan')
        nord = sum(1 for f in findings if f[0] == 'row order')
        detail = []
        if nplan:
            detail.append('%d plan' % nplan)
        if nord:
            detail.append('%d row order' % nord)
        print('%-28s %s%s%s' % (t, label, ' [%s]' % ', '.join(detail) if detail else '', note))
        for kind, sql, diff in findings:
            if dfh:
                dfh.write('=== %s: %s\n%s\n%s\n\n' % (t, kind, sql, '\n'.join(diff)))
            if kind == 'DIFFERENT' or kind == 'limit rows':
                print('    --- %s in %s:' % ('difference' if kind == 'DIFFERENT' else 'rows of an unordered LIMIT', t))
                for l in sql.splitlines()[-8:]:
                    print('    | ' + l)
                for l in diff[:args.show]:
                    print('    ' + l)
                if len(diff) > args.show:
                    print('    ... (%d more lines)' % (len(diff) - args.show))
        if verdict == 'DIFFERENT' and t not in ignored:
            failed += 1
        else:
            passed += 1
    if dfh:
        dfh.close()
    print()
    print('summary: %s' % ', '.join('%d %s' % (counts[k], words[k]) for k in RANK if counts[k]))
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
