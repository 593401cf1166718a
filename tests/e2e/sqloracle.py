"""The oracle of spate's SQL tests: the same input rows in spate (a CSV file
read by the filesystem connector) and in Python's sqlite3, each query run by
both, the results compared as multisets with NULLs, booleans and numbers
normalized. A case whose oracle sqlite cannot be (windows, aggregates over
event time) gives a Python function of the input rows instead."""

import collections
import math
import os
import re
import sqlite3
import subprocess

import spatetest


def csv_field(v):
    """A value as spate's CSV reads it: NULL is an empty unquoted field, the
    empty string "" quoted."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        if v == "" or any(c in v for c in ',"\n\r'):
            return '"' + v.replace('"', '""') + '"'
        return v
    return repr(v) if isinstance(v, float) else str(v)


def parse_csv_line(line):
    """One line of spate's CSV sink: fields, None for an empty unquoted one."""
    out, i, n = [], 0, len(line)
    while True:
        if i < n and line[i] == '"':
            i += 1
            buf = []
            while i < n:
                if line[i] == '"':
                    if i + 1 < n and line[i + 1] == '"':
                        buf.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                buf.append(line[i])
                i += 1
            out.append("".join(buf))
        else:
            j = line.find(",", i)
            j = n if j < 0 else j
            out.append(line[i:j] if j > i else None)
            i = j
        if i >= n:
            break
        i += 1  # the comma
        if i == n:
            out.append(None)
            break
    return out


CHANGE = re.compile(r"^(?:\d+> )?([+-][IUD])\[(.*)\]$")


def apply_changelog(text, what):
    """The changelog lines of text (+I[...], -U, +U, -D; Flink's print
    form) applied in order: the kinds seen and the rows left (None for
    null)."""
    rows, kinds = collections.Counter(), set()
    for line in text.splitlines():
        m = CHANGE.match(line)
        if not m:
            continue
        kind, body = m.groups()
        kinds.add(kind)
        row = tuple(None if v == "null" else v for v in body.split(", "))
        if kind in ("+I", "+U"):
            rows[row] += 1
        elif rows[row] > 0:
            rows[row] -= 1
        else:
            raise AssertionError(f"{kind} of a row that is not there: {line!r} ({what})")
    return kinds, list(rows.elements())


def norm(v):
    """A value in the form both sides are compared in."""
    if v is None:
        return None
    if isinstance(v, bool):
        return ("n", float(v))
    if isinstance(v, (int, float)):
        f = float(v)
        if math.isnan(f):
            return ("nan",)
        return ("n", float(f"{f:.9g}"))
    if v in ("true", "false"):
        return ("n", 1.0 if v == "true" else 0.0)
    try:
        return ("n", float(f"{float(v):.9g}"))
    except ValueError:
        return ("s", v)


def norm_rows(rows):
    return sorted((tuple(norm(v) for v in r) for r in rows), key=repr)


class Table:
    """A table of the test: its columns (name, spate type, sqlite type) and rows."""

    def __init__(self, name, columns, rows, watermark=None):
        self.name, self.columns, self.rows = name, columns, rows
        self.watermark = watermark  # "WATERMARK FOR ts AS ..." or None

    def write_csv(self, path):
        with open(path, "w") as f:
            for r in self.rows:
                f.write(",".join(csv_field(v) for v in r) + "\n")

    def ddl(self, path):
        cols = ", ".join(f"{c} {t}" for c, t, _ in self.columns)
        if self.watermark:
            cols += ", " + self.watermark
        return (f"CREATE TABLE {self.name} ({cols}) WITH (connector = 'filesystem', "
                f"path = '{path}', format = 'csv');")

    def load_sqlite(self, db):
        cols = ", ".join(f"{c} {st}" for c, _, st in self.columns)
        db.execute(f"CREATE TABLE {self.name} ({cols})")
        marks = ", ".join("?" for _ in self.columns)
        db.executemany(f"INSERT INTO {self.name} VALUES ({marks})",
                       [tuple(int(v) if isinstance(v, bool) else v for v in r)
                        for r in self.rows])


class Oracle:
    """Runs queries in spate and in sqlite over the same tables."""

    def __init__(self, tmp, tables):
        self.tmp, self.tables = tmp, tables
        self.db = sqlite3.connect(":memory:")
        self.db.execute("PRAGMA case_sensitive_like = ON")
        self.ddl = []
        for t in tables:
            path = os.path.join(tmp, f"{t.name}.csv")
            t.write_csv(path)
            t.load_sqlite(self.db)
            self.ddl.append(t.ddl(path))
        self.count = 0
        self.args = []  # more arguments of spate sql (-D key=value)

    def run_spate(self, select):
        """Runs CREATE TABLE out WITH (filesystem, csv) AS select in spate
        (one job, parallelism 1); the rows of its committed files."""
        self.count += 1
        out = os.path.join(self.tmp, f"out{self.count}")
        script = "\n".join(self.ddl) + (
            f"\nCREATE TABLE out WITH (connector = 'filesystem', path = '{out}', "
            f"format = 'csv') AS {select};\n")
        p = subprocess.run([spatetest.SPATE, "sql", "--local", "-p", "1"], input=script,
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise AssertionError(f"spate failed on {select!r}:\n{p.stderr}\n{p.stdout}")
        rows = []
        for name in sorted(os.listdir(out)) if os.path.isdir(out) else []:
            if name.startswith("."):
                continue
            with open(os.path.join(out, name)) as f:
                rows += [parse_csv_line(line[:-1] if line.endswith("\n") else line)
                         for line in f]
        return rows

    def run_changelog(self, select, parallelism=2):
        """Runs select in spate, its rows printed as a changelog (+I, -U, +U,
        -D, Flink's print form), at the given parallelism; the kinds seen
        and the rows that remain once every change is applied in order."""
        script = "\n".join(self.ddl) + f"\n{select};\n"
        p = subprocess.run([spatetest.SPATE, "sql", "--local", "-p", str(parallelism)] +
                           self.args, input=script, capture_output=True, text=True,
                           timeout=120)
        if p.returncode != 0:
            raise AssertionError(f"spate failed on {select!r}:\n{p.stderr}\n{p.stdout}")
        return apply_changelog(p.stdout, select)

    def refusal(self, test, select):
        """What spate says when it refuses select (over the tables), which
        it must."""
        script = "\n".join(self.ddl) + f"\n{select};\n"
        p = subprocess.run([spatetest.SPATE, "sql", "--local", "-p", "1"], input=script,
                           capture_output=True, text=True, timeout=120)
        test.assertNotEqual(p.returncode, 0, f"accepted: {select}")
        return p.stderr + p.stdout

    def check_changelog(self, test, select, oracle=None):
        """select's changelog in spate, applied, against oracle (sqlite SQL,
        select itself when None, or a function of the tables)."""
        got = norm_rows(self.run_changelog(select)[1])
        if callable(oracle):
            want = norm_rows(oracle(self.tables))
        else:
            want = norm_rows(self.sqlite(oracle or select))
        test.assertEqual(got, want, f"query: {select}")

    def check(self, test, select, oracle=None):
        """select in spate against oracle: sqlite SQL (select itself when
        None) or a function of the tables giving the rows."""
        got = norm_rows(self.run_spate(select))
        if callable(oracle):
            want = norm_rows(oracle(self.tables))
        else:
            want = norm_rows(self.sqlite(oracle or select))
        test.assertEqual(got, want, f"query: {select}")

    def sqlite(self, query):
        return [list(r) for r in self.db.execute(query).fetchall()]
