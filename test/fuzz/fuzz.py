#!/usr/bin/env python3
# test/fuzz/fuzz.py - differential fuzzer: random tables and random join and
# GROUP BY queries run under gpuhash's settings and compared with PostgreSQL
# alone (gpuhash.enabled = off).
#
# A round makes 2 to 4 tables from a seed, each column a function of a hashed
# row number, so that every table's columns of one type share a domain of
# values and joins match: every key type gpuhash hashes (integers of three
# widths, numeric, floats with -0, NaN and Infinity, text, varchar, char(n),
# bytea, text in ICU collations, one of them nondeterministic, date,
# timestamp, timestamptz, uuid, bool), NULLs, duplicates, skew, long values
# that PostgreSQL compresses or keeps out of line, empty tables.  It then
# runs random queries over them: inner, left, right and full joins (so the
# planner's own right, full, semi and anti hash joins, with the preserved
# side hashed where it is the smaller one), EXISTS, NOT EXISTS, IN, NOT IN,
# multi-way joins, multi-column, cross-type and expression keys; GROUP BY
# with count, sum, avg, min, max, bool_or, FILTER, HAVING, expressions of
# keys and aggregates, scalar subqueries in aggregate arguments; and
# gpuhash_aggregate() calls.  Each query runs natively, then under each
# configuration of CONFIGS (serial, parallel, tiny work_mem so that joins
# and aggregates spill, forced plans, the GPU's cost model), and the results
# are compared as multisets (see compare_results for the tolerances).  An
# error must have native's SQLSTATE class; a lost connection is a crash, and
# the fuzzer waits for the server to come back.
#
# A failure is shrunk (settings, then the query, then the tables' columns and
# rows) and printed as a self-contained SQL script with its seed.  Output is
# TAP: one test per seed run, one "not ok" per distinct failure.
#
# Only the Python standard library and libpq (through ctypes) are needed.

import argparse
import ctypes
import ctypes.util
import decimal
import math
import random
import sys
import time

# ---------------------------------------------------------------------------
# libpq through ctypes

_pq = ctypes.CDLL(ctypes.util.find_library("pq") or "libpq.so.5")
_pq.PQconnectdb.restype = ctypes.c_void_p
_pq.PQconnectdb.argtypes = [ctypes.c_char_p]
_pq.PQstatus.argtypes = [ctypes.c_void_p]
_pq.PQfinish.argtypes = [ctypes.c_void_p]
_pq.PQexec.restype = ctypes.c_void_p
_pq.PQexec.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_pq.PQerrorMessage.restype = ctypes.c_char_p
_pq.PQerrorMessage.argtypes = [ctypes.c_void_p]
_pq.PQresultStatus.argtypes = [ctypes.c_void_p]
_pq.PQntuples.argtypes = [ctypes.c_void_p]
_pq.PQnfields.argtypes = [ctypes.c_void_p]
_pq.PQftype.restype = ctypes.c_uint
_pq.PQftype.argtypes = [ctypes.c_void_p, ctypes.c_int]
_pq.PQfmod.argtypes = [ctypes.c_void_p, ctypes.c_int]
_pq.PQgetvalue.restype = ctypes.c_char_p
_pq.PQgetvalue.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
_pq.PQgetisnull.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
_pq.PQresultErrorField.restype = ctypes.c_char_p
_pq.PQresultErrorField.argtypes = [ctypes.c_void_p, ctypes.c_int]
_pq.PQresultErrorMessage.restype = ctypes.c_char_p
_pq.PQresultErrorMessage.argtypes = [ctypes.c_void_p]
_pq.PQclear.argtypes = [ctypes.c_void_p]
_NOTICE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)
_pq.PQsetNoticeProcessor.argtypes = [ctypes.c_void_p, _NOTICE, ctypes.c_void_p]
_quiet = _NOTICE(lambda arg, msg: None)       # notices and warnings are not results

FLOAT4, FLOAT8, NUMERIC = 700, 701, 1700


class Crash(Exception):
    """The server connection was lost."""


# A result of more rows than this is not compared: it counts as an error of
# its own (54000, program_limit_exceeded), equal on both sides when both are
# that large, and a native one is skipped as a timeout is.  Seed 13 at scale
# 1 made one that took Python past 10 GB.
ROW_CAP = 2000000


class Result:
    """One statement's outcome: rows (with column type OIDs), an error, a crash."""

    def __init__(self, kind, rows=None, types=None, state=None, msg=None):
        self.kind, self.rows, self.types, self.state, self.msg = kind, rows, types, state, msg

    def brief(self):
        if self.kind == "rows":
            return "%d rows" % len(self.rows)
        if self.kind == "error":
            return "ERROR %s: %s" % (self.state, (self.msg or "").strip().splitlines()[0])
        return "server crash (connection lost)"


class Conn:
    def __init__(self, dsn):
        self.dsn = dsn
        self.c = None
        self.connect()

    def connect(self):
        self.c = _pq.PQconnectdb(self.dsn.encode())
        if _pq.PQstatus(self.c) != 0:
            msg = _pq.PQerrorMessage(self.c).decode(errors="replace")
            _pq.PQfinish(self.c)
            self.c = None
            raise Crash(msg)
        _pq.PQsetNoticeProcessor(self.c, _quiet, None)

    def close(self):
        if self.c:
            _pq.PQfinish(self.c)
            self.c = None

    def run(self, sql):
        """run SQL; returns a Result, a crash being Result('crash')."""
        if self.c is None:
            return Result("crash", msg="no connection")
        r = _pq.PQexec(self.c, sql.encode())
        try:
            st = _pq.PQresultStatus(r) if r else 7
            if st == 2:
                nr, nf = _pq.PQntuples(r), _pq.PQnfields(r)
                if nr > ROW_CAP:
                    # as Python tuples such a result takes gigabytes
                    return Result("error", state="54000",
                                  msg="fuzz: a result of %d rows, too large to compare" % nr)
                types = [_pq.PQftype(r, j) for j in range(nf)]
                rows = []
                for i in range(nr):
                    rows.append(tuple(None if _pq.PQgetisnull(r, i, j)
                                      else _pq.PQgetvalue(r, i, j).decode(errors="replace")
                                      for j in range(nf)))
                return Result("rows", rows=rows, types=types)
            if st in (0, 1):
                return Result("rows", rows=[], types=[])
            state = _pq.PQresultErrorField(r, ord("C")) if r else None
            msg = (_pq.PQresultErrorMessage(r) if r else _pq.PQerrorMessage(self.c)) or b""
            msg = msg.decode(errors="replace")
            if _pq.PQstatus(self.c) != 0 or state is None:
                self.close()
                return Result("crash", msg=msg)
            return Result("error", state=state.decode(), msg=msg)
        finally:
            if r:
                _pq.PQclear(r)

    def must(self, sql):
        r = self.run(sql)
        if r.kind == "crash":
            raise Crash(r.msg)
        if r.kind == "error":
            raise RuntimeError("%s\n  in: %s" % (r.msg.strip(), sql[:300]))
        return r.rows


def reconnect(dsn, wait=90, after_crash=False):
    """connect, waiting for a server that restarts after a crash.

    A backend's crash closes our connection before the postmaster has seen
    it; a connection made in between is then terminated with the others.
    So after a crash, wait to see the server refuse connections (its
    restart), or for 5 s, and then for one that survives a moment.
    """
    end = time.time() + wait
    if after_crash:
        seen_end = time.time() + 5
        while time.time() < seen_end:
            try:
                Conn(dsn).close()
            except Crash:
                break
            time.sleep(0.05)
    while True:
        try:
            c = Conn(dsn)
            if c.run("SELECT 1").kind == "rows":
                if after_crash:
                    time.sleep(0.3)
                    if c.run("SELECT 1").kind != "rows":
                        continue
                return c
            c.close()
        except Crash:
            pass
        if time.time() > end:
            raise Crash("the server did not come back within %d s" % wait)
        time.sleep(0.5)


# ---------------------------------------------------------------------------
# Settings.  Each configuration is a set of atoms; every run resets all of
# them first, so one run's settings never leak into the next.

ATOMS = {
    "serial": ["max_parallel_workers_per_gather = 0"],
    "parallel": ["max_parallel_workers_per_gather = 2", "parallel_setup_cost = 0",
                 "parallel_tuple_cost = 0", "min_parallel_table_scan_size = 0",
                 "min_parallel_index_scan_size = 0"],
    "tinymem": ["work_mem = '64kB'"],
    "force": ["gpuhash.force_join = on", "gpuhash.force_agg = on"],
    "gpucost": ["gpuhash.cost_as_gpu = on"],
}
RESET = ["gpuhash.enabled", "max_parallel_workers_per_gather", "parallel_setup_cost",
         "parallel_tuple_cost", "min_parallel_table_scan_size", "min_parallel_index_scan_size",
         "work_mem", "gpuhash.force_join", "gpuhash.force_agg", "gpuhash.cost_as_gpu"]
CONFIGS = [
    ("serial", "gpucost"),
    ("parallel", "gpucost"),
    ("serial", "tinymem", "gpucost"),
    ("parallel", "tinymem", "gpucost"),
    ("serial", "force"),
    ("parallel", "force"),
    ("serial", "tinymem", "force"),
    ("parallel", "tinymem", "force"),
]
NATIVE = ("native",)


def settings_sql(config):
    out = ["RESET %s" % g for g in RESET]
    if config == NATIVE:
        out.append("SET gpuhash.enabled = off")
    else:
        out.append("SET gpuhash.enabled = on")
        for a in config:
            out += ["SET " + s for s in ATOMS[a]]
    return out


def config_name(config):
    return "+".join(config)


# ---------------------------------------------------------------------------
# Tables.  A column's value for row g is map(x), x = floor(domain * u^skew)
# with u a hash of (g, salt) in [0, 1): deterministic from the spec alone, so
# that a repro script rebuilds the same rows.

# type name: (SQL type, family for joins, value of x, aggregate kinds)
TYPES = {
    "int2": ("int2", "int", "(x %% 32000)::int2", "num"),
    "int4": ("int4", "int", "x::int4", "num"),
    "int8": ("int8", "int", "x::int8", "num"),
    "numeric": ("numeric", "numeric", "round(x::numeric / 4, 2 + (x %% 3)::int)", "num"),
    "float4": ("float4", "float", "(CASE WHEN x %% 61 = 1 THEN '-0' WHEN x %% 67 = 3 THEN 'NaN' "
               "WHEN x %% 71 = 5 THEN 'Infinity' ELSE (x / 8.0)::text END)::float4", "num"),
    "float8": ("float8", "float", "(CASE WHEN x %% 61 = 1 THEN '-0' WHEN x %% 67 = 3 THEN 'NaN' "
               "WHEN x %% 71 = 5 THEN 'Infinity' ELSE (x / 8.0)::text END)::float8", "num"),
    "text": ("text", "text", "'k' || x", "text"),
    "varchar": ("varchar(24)", "text", "('v' || x)::varchar(24)", "text"),
    "char": ("char(10)", "char", "('c' || x)::char(10)", "ord"),
    "bytea": ("bytea", "bytea", "convert_to('b' || x, 'UTF8')", None),
    "text_c": ('text COLLATE "C"', "text_c", "'k' || x", "text"),
    "text_icu": ('text COLLATE "und-x-icu"', "text_icu", "'k' || x", "text"),
    "text_ci": ('text COLLATE fz_ci', "text_ci",
                "CASE WHEN x %% 3 = 0 THEN 'K' || x ELSE 'k' || x END", None),
    "date": ("date", "date", "CASE WHEN x %% 97 = 7 THEN 'infinity'::date "
             "ELSE date '2000-01-01' + x::int END", "ord"),
    "timestamp": ("timestamp", "timestamp", "timestamp '2000-01-01' + x * interval '61 seconds'", "ord"),
    "timestamptz": ("timestamptz", "timestamptz",
                    "timestamptz '2000-01-01 00:00+00' + x * interval '61 seconds'", "ord"),
    "uuid": ("uuid", "uuid", "md5(x::text)::uuid", None),
    "bool": ("bool", "bool", "x %% 2 = 0", "bool"),
}
BYREF = {"numeric", "text", "varchar", "char", "bytea", "text_c", "text_icu", "text_ci", "uuid"}
TOASTABLE = {"text", "varchar", "text_c", "text_icu", "bytea"}


class Col:
    def __init__(self, name, typ, domain, nullfrac, skew, toast, salt):
        self.name, self.typ, self.domain = name, typ, domain
        self.nullfrac, self.skew, self.toast, self.salt = nullfrac, skew, toast, salt

    def copy(self):
        return Col(self.name, self.typ, self.domain, self.nullfrac, self.skew, self.toast, self.salt)

    def value_sql(self):
        v = TYPES[self.typ][2] % ()
        if self.toast and self.typ in TOASTABLE:
            # every fifth value long: repeat() compresses (main, external
            # compressed); md5 chains hardly compress, and with STORAGE
            # EXTERNAL none is compressed
            if self.toast == "compressed":
                longv = "repeat(md5(x::text), 80) || x"
            else:
                longv = "(SELECT string_agg(md5((x * 100 + i)::text), '') FROM generate_series(1, 70) i) || x"
            if self.typ == "bytea":
                longv = "convert_to(%s, 'UTF8')" % longv
            elif self.typ == "varchar":
                longv = "(%s)::varchar" % longv
            v = "CASE WHEN x %% 5 = 0 THEN %s ELSE %s END" % (longv, v)
        return v.replace("%%", "%")

    def sql(self):
        u = "((hashint8(g::int8 * 1000 + %d) & 2147483647)::float8 / 2147483648.0)" % self.salt
        if self.skew > 1:
            u = "power(%s, %d)" % (u, self.skew)
        x = "floor(%d * %s)::int8" % (self.domain, u)
        isnull = "(hashint8(g::int8 * 1000 + %d) & 1023) < %d" % (self.salt + 500, int(self.nullfrac * 1024))
        expr = "(SELECT %s FROM (SELECT %s AS x) s)" % (self.value_sql(), x)
        if self.nullfrac > 0:
            expr = "CASE WHEN %s THEN NULL ELSE %s END" % (isnull, expr)
        return "(%s)::%s" % (expr, TYPES[self.typ][0].split(" COLLATE")[0])


class Table:
    def __init__(self, name, n, cols, rows=None):
        self.name, self.n, self.cols = name, n, cols
        self.rows = rows            # explicit row numbers, after shrinking

    def copy(self):
        return Table(self.name, self.n, [c.copy() for c in self.cols],
                     None if self.rows is None else list(self.rows))

    def col(self, name):
        for c in self.cols:
            if c.name == name:
                return c
        return None

    def create_sql(self):
        defs = ["id int"] + ["%s %s" % (c.name, TYPES[c.typ][0]) for c in self.cols]
        out = ["CREATE TABLE %s (%s)" % (self.name, ", ".join(defs))]
        for c in self.cols:
            if c.toast == "external":
                out.append("ALTER TABLE %s ALTER COLUMN %s SET STORAGE EXTERNAL" % (self.name, c.name))
        src = ("unnest('{%s}'::int[]) g" % ",".join(map(str, self.rows)) if self.rows is not None
               else "generate_series(1, %d) g" % self.n)
        sel = ", ".join(["g"] + [c.sql() for c in self.cols])
        out.append("INSERT INTO %s SELECT %s FROM %s" % (self.name, sel, src))
        out.append("ANALYZE %s" % self.name)
        return out

    def nrows(self):
        return len(self.rows) if self.rows is not None else self.n


def gen_tables(rng, have_icu, scale=1.0):
    types = list(TYPES)
    if not have_icu:
        types = [t for t in types if t not in ("text_icu", "text_ci")]
    ntab = rng.choice([2, 2, 3, 3, 4])
    # a shared pool of column types so that tables have joinable columns
    pool = rng.sample(types, rng.randint(3, 6))
    for must in ("int4", "text"):
        if must not in pool and rng.random() < 0.7:
            pool.append(must)
    tables = []
    salt = rng.randint(1, 400) * 1000
    for i in range(ntab):
        n = rng.choice([0, 1, 3, 20, 100, 400, 1500, 3000, 3000, 6000, 12000])
        if n > 400:
            n = int(n * scale)
        cols = []
        ts = list(pool) + rng.sample(types, 2)
        rng.shuffle(ts)
        seen = {}
        for typ in ts[:rng.randint(3, 7)]:
            seen[typ] = seen.get(typ, 0) + 1
            name = "%s_%d" % (typ, seen[typ]) if seen[typ] > 1 else typ
            # low domains (many duplicates) only in small tables, so that
            # joins stay small enough to run many of them
            if n <= 400:
                domain = rng.choice([2, 10, 100, max(n, 10), max(n, 10) * 4])
            else:
                domain = rng.choice([n // 8, n // 2, n, n * 4])
            if typ == "bool":
                domain = 2
            nullfrac = rng.choice([0, 0, 0.1, 0.1, 0.3, 1.0 if rng.random() < 0.1 else 0.5])
            skew = rng.choice([1, 1, 1, 2])
            toast = rng.choice([None] * 6 + ["compressed", "external"]) if typ in TOASTABLE else None
            salt += 17
            cols.append(Col(name, typ, domain, nullfrac, skew, toast, salt))
        tables.append(Table("t%d" % (i + 1), n, cols))
    return tables


# ---------------------------------------------------------------------------
# Queries, as structures that render to SQL and that the shrinker can cut.
#
# An output item: (sql, kind); kind "exact" compares the text, "numval"
# compares numerics by value (numeric min/max and numeric group keys: which
# of equal values of different display scales comes back depends on the
# order of the rows, natively too), floats compare by the column's type OID.

class Query:
    def __init__(self):
        self.base = None            # (table, alias)
        self.joins = []             # [jtype, table, alias, [cond sql]]
        self.where = []             # [sql]
        self.semis = []             # [sql] EXISTS / IN predicates, ANDed to WHERE
        self.items = []             # [(sql, kind)]
        self.group = []             # [sql]
        self.having = []            # [sql]
        self.ga = False             # run through gpuhash_aggregate()
        self.coldef = None          # its column definition list

    def copy(self):
        q = Query()
        q.base = self.base
        q.joins = [[j[0], j[1], j[2], list(j[3])] for j in self.joins]
        q.where, q.semis, q.items = list(self.where), list(self.semis), list(self.items)
        q.group, q.having, q.ga, q.coldef = list(self.group), list(self.having), self.ga, self.coldef
        return q

    def inner_sql(self):
        s = "SELECT " + ", ".join(i[0] for i in self.items)
        s += " FROM %s %s" % self.base
        for jt, t, a, conds in self.joins:
            s += " %s %s %s ON %s" % (jt, t, a, " AND ".join(conds) if conds else "true")
        w = self.where + self.semis
        if w:
            s += " WHERE " + " AND ".join(w)
        if self.group:
            s += " GROUP BY " + ", ".join(self.group)
        if self.having:
            s += " HAVING " + " AND ".join(self.having)
        return s

    def sql(self):
        if self.ga:
            return ("SELECT * FROM gpuhash_aggregate($q$%s$q$) AS r(%s)"
                    % (self.inner_sql(), ", ".join("c%d %s" % (i, t) for i, t in enumerate(self.coldef))))
        return self.inner_sql()

    def ref_sql(self):
        """the native reference: gpuhash_aggregate's query runs as it is."""
        return self.inner_sql()

    def tables_used(self):
        return [self.base[0]] + [j[1] for j in self.joins]


class Gen:
    def __init__(self, rng, tables):
        self.rng, self.tables = rng, tables
        self.byname = {t.name: t for t in tables}

    # columns of an alias's table: [(alias.col, Col)]
    def cols(self, alias_tabs, pred=lambda c: True):
        out = []
        for a, t in alias_tabs:
            for c in self.byname[t].cols:
                if pred(c):
                    out.append(("%s.%s" % (a, c.name), c))
        return out

    def key_pair(self, left, right):
        """an equality between a column of the left aliases and one of the right."""
        rng = self.rng
        lc = self.cols(left)
        rc = self.cols(right)
        pairs = [(l, r) for l in lc for r in rc if TYPES[l[1].typ][1] == TYPES[r[1].typ][1]]
        if not pairs:
            return None
        (ls, lcol), (rs, rcol) = rng.choice(pairs)
        fam = TYPES[lcol.typ][1]
        # expression keys, now and then
        if rng.random() < 0.2:
            if fam == "int":
                return "%s + 1 = %s + 1" % (ls, rs) if rng.random() < 0.5 else "%s::int8 = %s" % (ls, rs)
            if fam in ("text", "text_c", "text_icu"):
                return "lower(%s) = lower(%s)" % (ls, rs) if rng.random() < 0.5 else "%s || 'x' = %s || 'x'" % (ls, rs)
            if fam == "numeric":
                return "%s * 2 = %s * 2" % (ls, rs)
            if fam == "char":
                return "%s::text = %s::text" % (ls, rs)
        return "%s = %s" % (ls, rs)

    def agg_items(self, scope, ga):
        """aggregate items over the aliases in scope; ga: gpuhash_aggregate's subset."""
        rng = self.rng
        items = []
        k = rng.randint(1, 5)
        cols = self.cols(scope)
        for _ in range(k):
            choice = rng.random()
            if choice < 0.15 or not cols:
                items.append(("count(*)", "exact"))
                continue
            s, c = rng.choice(cols)
            kind = TYPES[c.typ][3]
            fn = None
            arg = s
            if kind == "num":
                fn = rng.choice(["sum", "avg", "min", "max", "count", "sum"])
                r = rng.random()
                if r < 0.15 and c.typ in ("int2", "int4", "int8", "numeric"):
                    arg = "(%s * 2 + 1)" % s
                elif r < 0.22 and c.typ in ("int4", "int8") and not ga:
                    arg = "(1000 / (%s %% 5))" % s           # division by zero, unless filtered
                elif r < 0.3 and c.typ in ("float4", "float8"):
                    arg = "(%s * 2)" % s
                elif r < 0.38:
                    arg = "CASE WHEN %s > %s THEN %s END" % (s, "10" if c.typ != "numeric" else "2.5", s)
            elif kind == "text":
                fn = rng.choice(["min", "max", "count"])
            elif kind == "ord" and not (ga and c.typ == "char"):
                fn = rng.choice(["min", "max", "count"])
            elif kind == "bool" and not ga:
                fn = rng.choice(["bool_or", "count"])
            else:
                fn = "count"
            it = "%s(%s)" % (fn, arg)
            if not ga and rng.random() < 0.2:
                fc = rng.choice(cols)[0]
                if "1000 /" in arg:
                    it += " FILTER (WHERE %s %% 5 <> 0)" % s
                elif rng.random() < 0.5:
                    it += " FILTER (WHERE %s IS NOT NULL)" % fc
                else:
                    it += " FILTER (WHERE %s IS NULL)" % fc
            ik = "numval" if fn in ("min", "max") and c.typ == "numeric" else "exact"
            items.append((it, ik))
        if not ga and rng.random() < 0.15:
            # an expression of aggregates
            items.append(("count(*) * 2 + 1", "exact"))
        return items

    def subquery_item(self, scope):
        """a scalar subquery in an aggregate's argument, correlated or not."""
        rng = self.rng
        other = rng.choice(self.tables)
        if other.nrows() > 3000 or any(self.byname[t].nrows() > 3000 for _, t in scope):
            # a correlated subquery scans its table once a row
            return ("count(*)", "exact")
        lc = self.cols(scope, lambda c: TYPES[c.typ][1] == "int")
        oc = [c for c in other.cols if TYPES[c.typ][1] == "int"]
        if not lc or not oc:
            return ("sum((SELECT count(*) FROM %s))" % other.name, "exact")
        s = rng.choice(lc)[0]
        o = rng.choice(oc)
        if rng.random() < 0.5:
            return ("sum((SELECT max(z.%s) FROM %s z WHERE z.%s = %s))" % (o.name, other.name, o.name, s), "exact")
        return ("sum(%s + (SELECT count(*) FROM %s))" % (s, other.name), "exact")

    def query(self):
        rng = self.rng
        q = Query()
        ts = [t.name for t in self.tables]
        base = rng.choice(ts)
        q.base = (base, "a")
        scope = [("a", base)]
        shape = rng.random()
        if shape < 0.12:
            # semi / anti joins
            other = rng.choice(ts)
            kp = self.key_pair(scope, [("b", other)])
            if kp:
                l, r = kp.split(" = ", 1)
                form = rng.choice(["exists", "not exists", "in", "not in"])
                extra = ""
                if rng.random() < 0.3:
                    extra = " AND b.id % 3 <> a.id % 3"
                if form in ("exists", "not exists"):
                    q.semis.append("%s (SELECT 1 FROM %s b WHERE %s%s)" % (form.upper(), other, kp, extra))
                elif " " not in l.strip() and "(" not in l:
                    q.semis.append("%s %s (SELECT %s FROM %s b)" % (l, form.upper(), r, other))
                else:
                    q.semis.append("EXISTS (SELECT 1 FROM %s b WHERE %s)" % (other, kp))
        else:
            nj = rng.choice([0, 1, 1, 1, 2, 2, 3]) if shape < 0.85 else 0
            for i in range(nj):
                alias = "bcd"[i]
                other = rng.choice(ts)
                conds = []
                kp = self.key_pair(scope, [(alias, other)])
                if kp is None:
                    break
                conds.append(kp)
                if rng.random() < 0.25:
                    kp2 = self.key_pair(scope, [(alias, other)])
                    if kp2 and kp2 != kp:
                        conds.append(kp2)
                if rng.random() < 0.1:
                    conds.append("%s.id < a.id + 5000" % alias)
                jt = rng.choice(["JOIN", "JOIN", "LEFT JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "FULL JOIN"])
                q.joins.append([jt, other, alias, conds])
                scope.append((alias, other))
        if rng.random() < 0.2:
            c = rng.choice(self.cols(scope))
            q.where.append("%s IS NOT NULL" % c[0] if rng.random() < 0.5 else "a.id % 4 <> 1")
        # the select list
        mode = rng.random()
        small = all(self.byname[t].nrows() <= 400 for _, t in scope)
        if mode < 0.25 and small:
            cols = self.cols(scope)
            q.items = [("%s.id" % a, "exact") for a, _ in scope] + \
                [(s, "exact") for s, c in rng.sample(cols, min(len(cols), rng.randint(1, 3)))]
            return q
        ga = rng.random() < 0.2
        q.ga = ga
        if rng.random() < 0.25 and not ga:
            q.items = self.agg_items(scope, ga)
            if rng.random() < 0.3:
                q.items.append(self.subquery_item(scope))
            return q
        # GROUP BY
        keys = self.cols(scope, lambda c: c.typ not in ("bytea",) or rng.random() < 0.5)
        if not keys:
            q.items = self.agg_items(scope, ga)
            return q
        for s, c in rng.sample(keys, min(len(keys), rng.choice([1, 1, 1, 2, 3]))):
            if c.typ == "text_ci":
                if ga:
                    continue
                q.group.append(s)
                q.items.append(("lower(%s)" % s, "exact"))
            else:
                g = s
                if c.typ in ("int4", "int8") and rng.random() < 0.15:
                    g = "(%s %% 7)" % s
                q.group.append(g)
                q.items.append((g, "numval" if c.typ == "numeric" else "exact"))
        if not q.group:
            q.ga = False
            ga = False
        q.items += self.agg_items(scope, ga)
        if not ga and rng.random() < 0.15:
            q.items.append(self.subquery_item(scope))
        if not ga and rng.random() < 0.25:
            q.having.append(rng.choice(["count(*) > 1", "count(*) < 3", "sum(a.id) % 2 = 0"]))
        return q


def fill_coldef(conn, q):
    """gpuhash_aggregate's column definition list from the native query's result types."""
    c = conn.c
    res = _pq.PQexec(c, ("SELECT * FROM (%s) s LIMIT 0" % q.inner_sql()).encode())
    try:
        if _pq.PQresultStatus(res) != 2:
            return False
        specs = [(_pq.PQftype(res, j), _pq.PQfmod(res, j)) for j in range(_pq.PQnfields(res))]
    finally:
        _pq.PQclear(res)
    names = []
    for oid, mod in specs:
        rows = conn.must("SELECT format_type(%d, %s)" % (oid, mod if mod >= 0 else "NULL"))
        names.append(rows[0][0])
    q.coldef = names
    return True


# ---------------------------------------------------------------------------
# Comparison.  Floats: float8 results within a relative 1e-9 (sums and
# averages add in another order in parallel plans and on the device, and
# every float column the fuzzer makes is non-negative, so no cancellation
# magnifies that); float4 results within 1e-3 (README: gpuhash adds sum(real)
# in double precision and rounds once, PostgreSQL adds in single precision,
# which loses up to n * 2^-24 relative over n rows).  NaN equals NaN, and
# -0 equals 0 (which of the two a min, max or group key shows depends on the
# order of the rows).

TOL = {FLOAT8: 1e-9, FLOAT4: 1e-3}


def _fval(s):
    return float(s.replace("Infinity", "inf"))


def _sortkey(row, types, kinds):
    key = []
    for v, t, k in zip(row, types, kinds):
        if v is None:
            key.append((0, ""))
        elif t in TOL:
            f = _fval(v)
            key.append((2, "nan") if math.isnan(f) else (1, "%.5g" % (f + 0.0)))
        elif k == "numval" and t == NUMERIC:
            try:
                key.append((1, str(decimal.Decimal(v).normalize())))
            except decimal.InvalidOperation:
                key.append((1, v))
        else:
            key.append((1, v))
    return key


def _same(a, b, t, k):
    if a is None or b is None:
        return a is None and b is None
    if t in TOL:
        fa, fb = _fval(a), _fval(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        if math.isinf(fa) or math.isinf(fb):
            return fa == fb
        return abs(fa - fb) <= TOL[t] * max(abs(fa), abs(fb))
    if k == "numval" and t == NUMERIC:
        try:
            return decimal.Decimal(a) == decimal.Decimal(b)
        except decimal.InvalidOperation:
            return a == b
    return a == b


def compare_results(ref, got, kinds):
    """None when got matches ref, else a short description of the difference."""
    if ref.kind == "crash":
        return "native crashed"
    if got.kind == "crash":
        return "crash: " + got.brief()
    if ref.kind == "error" or got.kind == "error":
        if ref.kind == "error" and got.kind == "error":
            if ref.state[:2] == got.state[:2]:
                return None
        return "native: %s; gpuhash: %s" % (ref.brief(), got.brief())
    if len(ref.rows) != len(got.rows):
        return "native: %d rows; gpuhash: %d rows" % (len(ref.rows), len(got.rows))
    types = ref.types
    kinds = list(kinds) + ["exact"] * (len(types) - len(kinds))
    ra = sorted(ref.rows, key=lambda r: _sortkey(r, types, kinds))
    ga = sorted(got.rows, key=lambda r: _sortkey(r, got.types, kinds))
    for x, y in zip(ra, ga):
        for j, (a, b) in enumerate(zip(x, y)):
            if not _same(a, b, types[j], kinds[j]):
                return "row differs: native %s; gpuhash %s" % (x, y)
    return None


# ---------------------------------------------------------------------------
# Running a case

class Runner:
    def __init__(self, dsn, log):
        self.dsn, self.log = dsn, log
        self.conn = reconnect(dsn)
        self.crashes = 0
        self.timeouts = 0
        self.refused = 0
        self.plans = {}

    def ensure(self):
        if self.conn.c is None:
            self.crashes += 1
            self.conn = reconnect(self.dsn, after_crash=True)
            self.conn.must("SET search_path = %s, public" % self.schema)
            self.conn.must("SET statement_timeout = '%ds'" % self.timeout)

    def setup(self, schema, tables, timeout=20):
        self.schema, self.timeout = schema, timeout
        self.ensure()
        c = self.conn
        c.must("SET client_min_messages = warning")
        c.must("DROP SCHEMA IF EXISTS %s CASCADE" % schema)
        c.must("CREATE SCHEMA %s" % schema)
        c.must("RESET ALL")
        c.must("SET search_path = %s, public" % schema)
        c.must("SET statement_timeout = '%ds'" % timeout)
        for t in tables:
            for s in t.create_sql():
                c.must(s)

    def run_config(self, sql, config, explain=False):
        self.ensure()
        for s in settings_sql(config):
            r = self.conn.run(s)
            if r.kind != "rows":
                if r.kind == "crash":
                    self.ensure()
                raise RuntimeError("setting failed: %s: %s" % (s, r.brief()))
        if explain:
            r = self.conn.run("EXPLAIN (COSTS OFF) " + sql)
            if r.kind == "rows":
                text = "\n".join(x[0] for x in r.rows)
                for tag in ("GpuHashJoin", "GpuHashAgg", "Join Type: Right", "Join Type: Full",
                            "Join Type: Semi", "Join Type: Anti", "Join Type: Left", "Parallel Custom Scan",
                            "Device Scan:"):
                    if tag in text:
                        self.plans[tag] = self.plans.get(tag, 0) + 1
        r = self.conn.run(sql)
        if r.kind == "crash":
            # wait for the server's restart, so that the next run starts clean
            self.ensure()
        return r

    def check(self, q, configs, explain=False):
        """run q natively and under configs: (native result, [(config, problem)])."""
        ref = self.run_config(q.ref_sql(), NATIVE)
        kinds = [k for _, k in q.items]
        fails = []
        if ref.kind == "error" and ref.state in ("57014", "54000"):
            self.timeouts += 1          # too big a query to compare
            return ref, fails
        for cfg in configs:
            got = self.run_config(q.sql(), cfg, explain)
            if got.kind == "error" and got.state == "57014":
                # the CPU twin is slower than native; a hang shows as many of these
                self.timeouts += 1
                continue
            if q.ga and ref.kind == "rows" and got.kind == "error" and got.state == "0A000":
                # gpuhash_aggregate refuses what it does not run (README)
                self.refused += 1
                continue
            d = compare_results(ref, got, kinds)
            if d is not None:
                fails.append((cfg, d, got.kind, got.state))
        return ref, fails


# ---------------------------------------------------------------------------
# Shrinking.  A case is (tables, query, config); it still fails when the
# query under config differs from native in the same way (a crash stays a
# crash, a wrong result a wrong result, an error an error).

def used_columns(q, tables):
    sql = q.inner_sql()
    used = {}
    for t in tables:
        used[t.name] = [c for c in t.cols if c.name in sql]
    return used


class Shrinker:
    def __init__(self, runner, budget_s, log):
        self.r, self.deadline, self.log = runner, time.time() + budget_s, log
        self.tries = 0

    def fails(self, tables, q, cfg, kind):
        """whether the case still fails with a result of the same kind (an
        error of the same SQLSTATE)."""
        if time.time() > self.deadline:
            return False
        self.tries += 1
        try:
            self.r.setup("fz_shrink", tables)
            if q.ga and not fill_coldef(self.r.conn, q):
                return False
            ref, fails = self.r.check(q, [cfg])
        except (RuntimeError, Crash):
            return False
        return ref.kind != "crash" and any((k, st) == kind for _, _, k, st in fails)

    def shrink(self, tables, q, cfg, kind):
        tables = [t.copy() for t in tables]
        q = q.copy()
        # settings: drop atoms while it still fails
        cfg = tuple(cfg)
        for a in list(cfg):
            trial = tuple(x for x in cfg if x != a)
            if trial and self.fails(tables, q, trial, kind):
                cfg = trial
        # drop unreferenced tables and columns
        tables = self.prune(tables, q)
        # the query: joins, predicates, items, group keys
        changed = True
        while changed and time.time() < self.deadline:
            changed = False
            for cand in self.query_cuts(q):
                t2 = self.prune(tables, cand)
                if self.fails(t2, cand, cfg, kind):
                    q, tables, changed = cand, t2, True
                    break
        # the columns' shapes: no toast, no skew, no NULLs, smaller domains
        for t in tables:
            for c in t.cols:
                for attr, val in (("toast", None), ("skew", 1), ("nullfrac", 0)):
                    if getattr(c, attr) != val:
                        old = getattr(c, attr)
                        setattr(c, attr, val)
                        if not self.fails(tables, q, cfg, kind):
                            setattr(c, attr, old)
        # rows: halve each table while it fails, then cut row ranges
        for t in tables:
            while t.n > 1 and time.time() < self.deadline:
                old = t.n
                t.n = old // 2
                if not self.fails(tables, q, cfg, kind):
                    t.n = old
                    break
            if t.n <= 64 and t.rows is None:
                t.rows = list(range(1, t.n + 1))
                t.rows = self.ddmin(tables, t, q, cfg, kind)
        return tables, q, cfg

    def ddmin(self, tables, t, q, cfg, kind):
        rows = list(t.rows)
        chunk = max(1, len(rows) // 2)
        while chunk >= 1 and time.time() < self.deadline:
            i, cut = 0, False
            while i < len(rows):
                trial = rows[:i] + rows[i + chunk:]
                t.rows = trial
                if self.fails(tables, q, cfg, kind):
                    rows, cut = trial, True
                else:
                    i += chunk
            t.rows = rows
            if not cut:
                if chunk == 1:
                    break
                chunk //= 2
        return rows

    def prune(self, tables, q):
        used = used_columns(q, tables)
        names = set(q.tables_used())
        for it, _ in q.items:
            for t in tables:
                if t.name in it:
                    names.add(t.name)
        out = []
        for t in tables:
            if t.name in names or any(t.name in s for s in q.semis):
                t2 = t.copy()
                t2.cols = [c.copy() for c in used[t.name]]
                out.append(t2)
        return out

    def query_cuts(self, q):
        out = []
        for i in range(len(q.joins)):
            # a join whose alias nothing else names
            a = q.joins[i][2]
            rest = q.copy()
            del rest.joins[i]
            if ("%s." % a) not in rest.sql():
                out.append(rest)
        for i in range(len(q.joins)):
            if len(q.joins[i][3]) > 1:
                for j in range(len(q.joins[i][3])):
                    c = q.copy()
                    del c.joins[i][3][j]
                    out.append(c)
            if q.joins[i][0] != "JOIN":
                c = q.copy()
                c.joins[i][0] = "JOIN" if q.joins[i][0] != "FULL JOIN" else "LEFT JOIN"
                out.append(c)
        for attr in ("where", "semis", "having"):
            for i in range(len(getattr(q, attr))):
                c = q.copy()
                del getattr(c, attr)[i]
                out.append(c)
        if len(q.items) > 1:
            for i in range(len(q.items)):
                c = q.copy()
                it = c.items[i][0]
                del c.items[i]
                if it in c.group:
                    c.group.remove(it)
                if it.startswith("lower(") and it[6:-1] in c.group:
                    c.group.remove(it[6:-1])
                if c.ga:
                    c.coldef = None
                out.append(c)
        for i in range(len(q.items)):
            it = q.items[i][0]
            if "FILTER" in it:
                c = q.copy()
                c.items[i] = (it.split(" FILTER")[0], q.items[i][1])
                out.append(c)
        if q.ga:
            c = q.copy()
            c.ga = False
            out.append(c)
        return out


def table_values(conn, tables):
    """the rows of small tables, as VALUES lists, for a readable repro."""
    out = {}
    for t in tables:
        if t.nrows() > 30:
            continue
        cols = ["id"] + [c.name for c in t.cols]
        rows = conn.must("SELECT format('(%s)', concat_ws(', ', %s)) FROM %s ORDER BY id"
                         % ("%s", ", ".join("quote_nullable(%s)" % c for c in cols), t.name))
        if all(len(r[0]) < 300 for r in rows):
            out[t.name] = [r[0] for r in rows]
    return out


def repro_script(tables, q, cfg, where, problem, values):
    out = ["-- gpuhash differential fuzzer: %s" % where,
           "-- problem: %s" % problem,
           "-- settings: %s" % config_name(cfg),
           "CREATE EXTENSION IF NOT EXISTS gpuhash;",
           "SET gpuhash.device = cpu;  -- or gpu on a GPU host"]
    if any(c.typ == "text_ci" for t in tables for c in t.cols):
        out.append("CREATE COLLATION fz_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);")
    for t in tables:
        sqls = t.create_sql()
        if t.name in values:
            sqls = [x for x in sqls if not x.startswith("INSERT")]
            if values[t.name]:
                sqls.insert(-1, "INSERT INTO %s VALUES %s" % (t.name, ", ".join(values[t.name])))
        out += [x + ";" for x in sqls]
    out.append("-- native (the reference)")
    out += [s + ";" for s in settings_sql(NATIVE)[-1:]]
    out.append(q.ref_sql() + ";")
    out.append("-- gpuhash")
    out += [s + ";" for s in settings_sql(cfg) if not s.startswith("RESET")]
    out.append(q.sql() + ";")
    return "\n".join(out)


# ---------------------------------------------------------------------------

def prepare_db(dsn):
    c = reconnect(dsn)
    c.must("SET client_min_messages = warning")
    c.must("CREATE EXTENSION IF NOT EXISTS gpuhash")
    have_icu = bool(c.must("SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu'"))
    if have_icu:
        c.run("CREATE COLLATION IF NOT EXISTS public.fz_ci "
              "(provider = icu, locale = 'und-u-ks-level2', deterministic = false)")
    c.close()
    return have_icu


def fuzz(args):
    out = sys.stdout
    have_icu = prepare_db(args.dsn)
    runner = Runner(args.dsn, out)
    deadline = time.time() + args.seconds
    seed = args.seed
    nq = nruns = 0
    found = []                  # (kind, problem, script, shrinking runs)
    classes = {}                # failure class: queries that failed so
    rounds = 0
    configs = [c for c in CONFIGS if args.configs is None or config_name(c) in args.configs]
    while time.time() < deadline and (args.rounds == 0 or rounds < args.rounds):
        rseed = seed * 100003 + rounds
        rng = random.Random(rseed)
        rounds += 1
        tables = gen_tables(rng, have_icu, args.scale)
        try:
            runner.setup("fz", tables)
        except (RuntimeError, Crash) as e:
            print("# round %d: tables failed: %s" % (rounds, str(e).splitlines()[0]), file=out)
            continue
        gen = Gen(rng, tables)
        for qi in range(args.queries_per_round):
            if time.time() > deadline:
                break
            q = gen.query()
            try:
                runner.ensure()
                if q.ga and not fill_coldef(runner.conn, q):
                    q.ga = False
                ref, fails = runner.check(q, configs, explain=args.explain)
            except (RuntimeError, Crash) as e:
                print("# round %d query %d: harness error: %s" % (rounds, qi, str(e).splitlines()[0]), file=out)
                try:
                    runner.setup("fz", tables)
                except (RuntimeError, Crash):
                    break
                continue
            nq += 1
            nruns += 1 + len(configs)
            if args.verbose:
                print("# %s -> %s" % (q.sql()[:200], ref.brief()), file=out)
            if not fails:
                continue
            cfg, problem, kind, state = fails[0]
            # one class a failure: every crash is one, an error by its
            # SQLSTATE and message, wrong results each (at most 5 shrunk)
            if kind == "crash":
                cls = "crash"
            elif kind == "error":
                cls = "error " + problem.split("gpuhash: ", 1)[-1]
            else:
                cls = "mismatch %d" % min(len(classes), 5)
            classes[cls] = classes.get(cls, 0) + 1
            print("# seed %d round %d query %d fails under %s: %s" % (seed, rounds, qi, config_name(cfg), problem), file=out)
            print("#   %s" % q.sql(), file=out)
            if classes[cls] > 1:
                continue
            sh = Shrinker(runner, args.shrink_seconds, out)
            t2, q2, c2 = sh.shrink(tables, q, cfg, (kind, state))
            # the minimal case once more, for its own description and rows
            values = {}
            try:
                runner.setup("fz_shrink", t2)
                if q2.ga:
                    fill_coldef(runner.conn, q2)
                values = table_values(runner.conn, t2)
                _, f2 = runner.check(q2, [c2])
                problem2 = f2[0][1] if f2 else problem + " (the shrunk case passed when run again: flaky?)"
            except (RuntimeError, Crash) as e:
                problem2 = problem + " (the shrunk case could not be run again: %s)" % str(e).splitlines()[0]
            script = repro_script(t2, q2, c2, "seed %d, round %d, query %d" % (seed, rounds, qi),
                                  problem2, values)
            found.append((kind, problem2, script, sh.tries))
            print("# minimal repro (%d shrinking runs):" % sh.tries, file=out)
            for line in script.splitlines():
                print("#   " + line, file=out)
            try:
                runner.setup("fz", tables)
            except (RuntimeError, Crash):
                break
            if args.stop_on_failure:
                break
            out.flush()
        if found and args.stop_on_failure:
            break
        out.flush()
    try:
        runner.conn.must("RESET ALL")
        runner.conn.run("DROP SCHEMA IF EXISTS fz CASCADE")
        runner.conn.run("DROP SCHEMA IF EXISTS fz_shrink CASCADE")
    except (RuntimeError, Crash):
        pass
    print("# seed %d: %d rounds, %d queries, %d runs, %d crashes, %d timeouts and %d refusals "
          "of gpuhash_aggregate (not compared), %d distinct failures" %
          (seed, rounds, nq, nruns, runner.crashes, runner.timeouts, runner.refused, len(found)), file=out)
    for cls, k in sorted(classes.items()):
        print("#   %d queries: %s" % (k, cls.splitlines()[0]), file=out)
    if runner.plans:
        print("# plans seen (EXPLAIN, per run): " +
              ", ".join("%s %d" % kv for kv in sorted(runner.plans.items())), file=out)
    return nq, found


def main():
    ap = argparse.ArgumentParser(description="gpuhash differential fuzzer (TAP output)")
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--seed", type=int, action="append",
                    help="a seed to run (repeatable); default: 35 and one from the clock")
    ap.add_argument("--seconds", type=float, default=60, help="time per seed")
    ap.add_argument("--rounds", type=int, default=0, help="table sets per seed (0: until the time is up)")
    ap.add_argument("--queries-per-round", type=int, default=25)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiplies the larger tables' sizes (a GPU host: 10 or more)")
    ap.add_argument("--shrink-seconds", type=float, default=120)
    ap.add_argument("--configs", nargs="*", help="configuration names to run (serial+force, ...)")
    ap.add_argument("--explain", action="store_true", help="count the plans' gpuhash nodes and join types")
    ap.add_argument("--stop-on-failure", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    seeds = args.seed or [35, int(time.time()) % 1000000]
    tn = failed = 0
    for s in seeds:
        args.seed = s
        nq, found = fuzz(args)
        if nq == 0:
            found = [("none", "ran no query", "", 0)]
        if not found:
            tn += 1
            print("ok %d - seed %d: %d queries, each under %d settings, match native" %
                  (tn, s, nq, len(CONFIGS if args.configs is None else args.configs)))
        for kind, problem, script, tries in found:
            tn += 1
            failed += 1
            print("not ok %d - seed %d: %s" % (tn, s, problem[:200]))
            for line in script.splitlines():
                print("# " + line)
        sys.stdout.flush()
    print("1..%d" % tn)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
