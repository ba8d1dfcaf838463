"""Differential testing against PostgreSQL: seeded random schemas, data and statements, run on Tabula and on a
PostgreSQL 15 side by side, comparing rows (as multisets where no ORDER BY fixes the order), row counts,
SQLSTATEs and what each transaction leaves behind.

A difference is a bug, unless Tabula refused the statement with 0A000 (feature not supported), which is
allowed: a statement Tabula cannot answer as PostgreSQL does must fail clearly, never differ silently.
The statement forms generated are those Tabula supports; DIFFERENCES below lists the deliberate differences
(README, "Differences from PostgreSQL") that the generator stays away from, and why.

Usage: python3 oracle.py --tabula PORT --postgres PORT [--postgres-user U] [--seed N] [--statements N]
Prints the statements tried and the differences found; exits 1 when there is one.
"""
import argparse
import decimal
import math
import random
import sys

import psycopg

DIFFERENCES = {
    "identity counters": "generated keys count per partition-key value and move past given values: no identity columns",
    "ADD COLUMN DEFAULT": "refused by Tabula (existing rows would not get it): not generated",
    "evaluation order": "PostgreSQL does not define which condition of an AND it evaluates first, so an error in "
                        "one (a division by zero) may or may not be raised: divisors are never zero, and the "
                        "errors a transaction meets are raised by statements of their own",
    "constant folding": "PostgreSQL evaluates constant subexpressions while planning, so 1 / 0 fails even where no "
                        "row reaches it; Tabula evaluates them per row: follows from the rule above",
    "min and max of boolean": "PostgreSQL has none (42883); Tabula's analytic engine has: not generated",
    "numeric display scale": "a numeric computed by the analytic engine from an unconstrained numeric prints "
                             "without the trailing zeros PostgreSQL keeps; the tables have no numeric column, "
                             "and numerics are compared with their scale",
    "numeric math functions": "sqrt, exp, ln, log and power of a numeric are printed without trailing zeros "
                              "by the analytic route (numeric display scale): rounded to 8 places, which both "
                              "routes print as they are",
    "stricter types": "PostgreSQL has no date + bigint (42883), Tabula adds them: day counts are cast to integer",
}

TABLES = {
    "t1": ("CREATE TABLE t1 (k bigint PRIMARY KEY, a bigint, b text, c double precision, "
           "d boolean DEFAULT true, e bigint DEFAULT 7, u bigint UNIQUE)", ["k"], ["k", "a", "b", "c", "d", "e", "u"]),
    "t2": ("CREATE TABLE t2 (p text, q bigint, v bigint, w text DEFAULT 'none', PRIMARY KEY (p, q))",
           ["p", "q"], ["p", "q", "v", "w"]),
}
# A table without a primary key: its rows repeat, and are written and read by any column (Gen.keyless).
KEYLESS = {"t3": ("CREATE TABLE t3 (g bigint, h text, n bigint DEFAULT 1)", ["g", "h", "n"])}
# Run first: the names PostgreSQL gives unaliased columns (its FigureColname), over both routes, compared
# with the rows like every statement's answer.
NAMED = [
    "SELECT k, k::text, (k)::text::int, t1.b, (b), -k, k + 1, b || 'x', b IS NULL, k IN (1), b LIKE 'a%' FROM t1",
    "SELECT 1, 1::int, 1::int::text, 'a'::varchar(3), 1::numeric(5,2), true::boolean, '1'::double precision, "
    "'x'::character varying, date '2024-01-01', interval '1 day', NULL",
    "SELECT upper(b), coalesce(a, 0), nullif(a, 1), greatest(a, 1), least(a, 1), count(*) OVER (), "
    "ceil(c), ceiling(c), floor(c), abs(a) FROM t1",
    "SELECT CASE WHEN a > 0 THEN 1 END, CASE WHEN a > 0 THEN 1 ELSE a END, CASE WHEN a > 0 THEN b ELSE 'n' END FROM t1",
    "SELECT extract(year FROM date '2024-01-01'), date_part('month', date '2024-01-01'), "
    "substring('abc' FROM 1 FOR 2), trim(' a '), trim(LEADING ' ' FROM ' a'), position('a' IN 'abc'), "
    "overlay('abc' PLACING 'x' FROM 1)",
    "SELECT (SELECT max(k) FROM t1), (SELECT max(k) AS m FROM t1), EXISTS (SELECT 1 FROM t1), ARRAY[1, 2], "
    "current_date = current_date, current_user",
    "SELECT count(*), sum(k), max(b), count(*) + 1 FROM t1",
    "SELECT s.count, s.upper, s.extract, s.coalesce FROM (SELECT count(*), upper('a'), extract(day FROM date "
    "'2024-01-02'), coalesce(max(a), 0) FROM t1) s",
    "WITH w AS (SELECT k, lower(b) FROM t1) SELECT w.lower FROM w ORDER BY k",
]
INTS = {"k", "a", "e", "q", "v", "u"}
TEXTS = {"b", "p", "w"}
WORDS = ["ab", "abc", "b", "x", "X", "", "a%", "zz"]


class Gen:
    def __init__(self, rng):
        self.r = rng

    def int(self, nullable=True):
        if nullable and self.r.random() < 0.15:
            return "NULL"
        return str(self.r.choice([self.r.randint(-5, 30), self.r.randint(0, 10), 0, 1, -1]))

    def text(self, nullable=True):
        if nullable and self.r.random() < 0.15:
            return "NULL"
        return "'" + self.r.choice(WORDS).replace("'", "''") + "'"

    def double(self):
        if self.r.random() < 0.15:
            return "NULL"
        return self.r.choice(["0.5", "1.25", "-2", "3", "1e3", "0"])

    def value(self, col, nullable=True):
        if col in INTS:
            return self.int(nullable)
        if col in TEXTS:
            return self.text(nullable)
        if col == "c":
            return self.double()
        if col == "d":
            return self.r.choice(["true", "false", "NULL"])
        raise ValueError(col)

    def int_expr(self, cols, depth=0):
        """An integer expression over integer columns: the arithmetic and functions both engines share."""
        choice = self.r.randint(0, 9 if depth < 2 else 2)
        if choice <= 1:
            return self.r.choice(cols)
        if choice == 2:
            return self.int(nullable=False)
        a, b = self.int_expr(cols, depth + 1), self.int_expr(cols, depth + 1)
        return self.r.choice([
            f"({a} + {b})", f"({a} - {b})", f"({a} * {b})", f"abs({a})", f"coalesce({a}, {b})",
            f"(CASE WHEN {a} > {b} THEN {a} ELSE {b} END)", f"({a} / {self.divisor(b)})",
            f"({a} % {self.divisor(b)})", f"greatest({a}, {b})", f"least({a}, {b})",
        ])

    def text_expr(self, cols, depth=0):
        """A text expression: concatenation and the string functions both engines share."""
        if depth >= 2 or self.r.random() < 0.3:
            return self.r.choice(cols + [self.text(False)])
        a = self.text_expr(cols, depth + 1)
        return self.r.choice([
            f"({a} || {self.text_expr(cols, depth + 1)})", f"upper({a})", f"lower({a})", f"length({a})::text",
            f"substr({a}, {self.r.randint(1, 3)}, {self.r.randint(0, 3)})", f"coalesce({a}, 'n')",
            f"replace({a}, 'a', 'q')", f"trim({a})", f"concat({a}, {self.text_expr(cols, depth + 1)})",
        ])

    def divisor(self, e):
        """Never zero: which of several conditions PostgreSQL evaluates first is not defined, so a division
        by zero in one of them may or may not be reached (see DIFFERENCES)."""
        return self.r.choice(["2", "3", "-4", f"(abs({e}) + 1)"])

    def predicate(self, table, depth=0):
        _, key, cols = TABLES[table]
        ints = [c for c in cols if c in INTS]
        texts = [c for c in cols if c in TEXTS]
        choice = self.r.randint(0, 11 if depth < 2 else 8)
        if choice == 0:
            return f"{key[0]} = {self.value(key[0], False)}"
        if choice == 1:
            return f"{key[0]} IN ({', '.join(self.value(key[0], False) for _ in range(self.r.randint(1, 4)))})"
        if choice == 2:
            c = self.r.choice(ints)
            return f"{c} BETWEEN {self.int(False)} AND {self.int(False)}"
        if choice == 3:
            return f"{self.r.choice(cols)} IS {self.r.choice(['', 'NOT '])}NULL"
        if choice == 4 and texts:
            return f"{self.r.choice(texts)} LIKE {self.r.choice(['a%', '%b', 'x', '%'])!r}".replace('"', "'")
        if choice == 5:
            return f"{self.int_expr(ints)} {self.r.choice(['=', '<>', '<', '<=', '>', '>='])} {self.int_expr(ints)}"
        if choice == 6 and texts:
            return f"{self.r.choice(texts)} {self.r.choice(['=', '<', '>='])} {self.text(False)}"
        if choice == 7 and len(key) == 2:
            return f"{key[0]} = {self.value(key[0], False)} AND {key[1]} {self.r.choice(['>', '<=', '='])} {self.int(False)}"
        if choice == 8:
            return f"{self.r.choice(ints)} {self.r.choice(['=', '>', '<'])} {self.int()}"
        a, b = self.predicate(table, depth + 1), self.predicate(table, depth + 1)
        return self.r.choice([f"({a} AND {b})", f"({a} OR {b})", f"NOT ({a})"])

    def statement(self):
        table = self.r.choice(list(TABLES))
        _, key, cols = TABLES[table]
        attrs = [c for c in cols if c not in key]
        ints = [c for c in cols if c in INTS]
        kind = self.r.choices(["insert", "upsert", "update", "delete", "select", "aggregate", "join", "values",
                               "subquery", "set operation", "functions", "ordered", "grouped", "keyless"],
                              [5, 2, 4, 1, 6, 3, 2, 1, 3, 1, 3, 2, 2, 3])[0]
        if kind in QUERIES:
            return QUERIES[kind](self)
        if kind in ("insert", "upsert"):
            chosen = key + [c for c in attrs if self.r.random() < 0.7]
            rows = []
            for _ in range(self.r.randint(1, 3)):
                vals = [self.value(c, c not in key) if self.r.random() > 0.1 or c in key else "DEFAULT" for c in chosen]
                rows.append(f"({', '.join(vals)})")
            sql = f"INSERT INTO {table} ({', '.join(chosen)}) VALUES {', '.join(rows)}"
            if kind == "upsert":
                target = [c for c in attrs if c in chosen] or attrs
                col = self.r.choice(target)
                action = self.r.choice([
                    "DO NOTHING",
                    f"DO UPDATE SET {col} = EXCLUDED.{col}",
                    f"DO UPDATE SET {col} = {table}.{col} + 1" if col in INTS else f"DO UPDATE SET {col} = EXCLUDED.{col}",
                ])
                # The arbiter: the key, or t1's UNIQUE column (named, or its constraint). Two proposals for one
                # row in a statement are 21000 for DO UPDATE, as in PostgreSQL.
                arbiter = f"({', '.join(key)})"
                if "u" in chosen and self.r.random() < 0.5:
                    arbiter = self.r.choice(["(u)", "ON CONSTRAINT t1_u_key"])
                sql = f"INSERT INTO {table} ({', '.join(chosen)}) VALUES {', '.join(rows)} ON CONFLICT {arbiter} {action}"
            if self.r.random() < 0.2:
                sql += f" RETURNING {', '.join(self.r.sample(cols, 2))}"
            return sql, False
        if kind == "update":
            col = self.r.choice(attrs)
            if col in INTS and self.r.random() < 0.5:
                value = self.r.choice([f"{col} + {self.int(False)}", f"{col} - 1", self.int_expr(ints)])
            else:
                value = self.r.choice([self.value(col), "DEFAULT"]) if col in ("d", "e", "w") else self.value(col)
            sql = f"UPDATE {table} SET {col} = {value} WHERE {self.predicate(table)}"
            if self.r.random() < 0.2:
                sql += f" RETURNING {', '.join(key)}, {col}"
            return sql, False
        if kind == "delete":
            return f"DELETE FROM {table} WHERE {self.predicate(table)}", False
        if kind == "select":
            items = self.r.sample(cols, self.r.randint(1, len(cols)))
            if self.r.random() < 0.4:
                items.append(self.int_expr(ints) + " AS x")
            texts = [c for c in cols if c in TEXTS]
            if texts and self.r.random() < 0.3:
                items.append(self.text_expr(texts) + " AS y")
            if self.r.random() < 0.2:
                items.append(self.r.choice([f"{self.r.choice(ints)}::text", f"{self.r.choice(ints)}::double precision",
                                            f"({self.r.choice(ints)} > 3)::text", f"cast({self.r.choice(cols)} AS text)"]) + " AS z")
            sql = f"SELECT {', '.join(items)} FROM {table}"
            if self.r.random() < 0.8:
                sql += f" WHERE {self.predicate(table)}"
            ordered = self.r.random() < 0.4
            if ordered:
                sql += f" ORDER BY {', '.join(k + self.r.choice(['', ' DESC']) for k in key)}"
                if self.r.random() < 0.5:
                    sql += f" LIMIT {self.r.randint(0, 5)}"
            return sql, ordered
        if kind == "aggregate":
            group = self.r.choice([None, self.r.choice(attrs)])
            # PostgreSQL has no min or max of boolean (Tabula's analytic engine has).
            ordered_cols = [c for c in cols if c != "d"]
            aggs = self.r.sample([f"count(*)", f"count({self.r.choice(cols)})", f"sum({self.r.choice(ints)})",
                                  f"min({self.r.choice(ordered_cols)})", f"max({self.r.choice(ordered_cols)})"], 2)
            if "c" in cols:
                aggs.append("avg(c)")
            aggs.append(f"avg({self.r.choice(ints)})")
            sql = f"SELECT {(group + ', ') if group else ''}{', '.join(aggs)} FROM {table}"
            if self.r.random() < 0.6:
                sql += f" WHERE {self.predicate(table)}"
            if group:
                sql += f" GROUP BY {group}"
            return sql, False
        if kind == "join":
            return (f"SELECT t1.k, t1.a, t2.p, t2.v FROM t1 JOIN t2 ON t1.a = t2.q"
                    f" WHERE {self.predicate('t1')}"), False
        return f"SELECT {self.int_expr(['1', '2', '-3'])} AS x, {self.text(False)} || {self.text()} AS y", False


    def subquery(self):
        """Subqueries as PostgreSQL runs them: scalar (correlated or not; more than one row is 21000), IN and
        NOT IN (NULLs in the list make NOT IN unknown), EXISTS, and in FROM."""
        choice = self.r.randint(0, 5)
        if choice == 0:
            extra = f" AND {self.predicate('t2')}" if self.r.random() < 0.5 else ""
            col = self.r.choice(["v", "w", "p"])
            return (f"SELECT k, a, (SELECT {col} FROM t2 WHERE t2.q = t1.a{extra}) AS s FROM t1"
                    f" WHERE {self.predicate('t1')}"), False
        if choice == 1:
            return (f"SELECT k, b FROM t1 WHERE {self.r.choice(['a', 'e', 'k'])} {self.r.choice(['IN', 'NOT IN'])}"
                    f" (SELECT {self.r.choice(['q', 'v'])} FROM t2 WHERE {self.predicate('t2')})"), False
        if choice == 2:
            return (f"SELECT p, q, v FROM t2 WHERE {self.r.choice(['', 'NOT '])}EXISTS"
                    f" (SELECT 1 FROM t1 WHERE t1.a = t2.v AND {self.predicate('t1')})"), False
        if choice == 3:
            agg = self.r.choice(["min(v)", "max(v)", "count(*)", "sum(v)", "min(q)"])
            return (f"SELECT k, a FROM t1 WHERE a {self.r.choice(['=', '>', '<='])}"
                    f" (SELECT {agg} FROM t2 WHERE {self.predicate('t2')})"), False
        if choice == 4:
            return (f"SELECT count(*), count(x), sum(x) FROM (SELECT DISTINCT {self.int_expr(['a', 'e', 'k'])} AS x"
                    f" FROM t1 WHERE {self.predicate('t1')}) s"), False
        # A scalar subquery in a write: uncorrelated, which Tabula runs first.
        return (f"UPDATE t1 SET a = (SELECT {self.r.choice(['max(v)', 'min(q)', 'v'])} FROM t2 WHERE"
                f" {self.predicate('t2')}) WHERE {self.predicate('t1')}"), False

    def keyless(self):
        """A table without a primary key: equal rows side by side, written and read by any column."""
        def pred():
            return self.r.choice([f"g = {self.int(False)}", f"h LIKE {self.r.choice(['a%', '%b', 'x'])!r}".replace('"', "'"),
                                  f"n > {self.int(False)}", "g IS NULL", f"(g + n) < {self.int(False)}",
                                  f"h = {self.text(False)}"])
        choice = self.r.randint(0, 6)
        if choice <= 1:
            rows = ", ".join(f"({self.int()}, {self.text()}, {self.r.choice([self.int(), 'DEFAULT'])})"
                             for _ in range(self.r.randint(1, 3)))
            return f"INSERT INTO t3 VALUES {rows}" + (" RETURNING g, h, n" if self.r.random() < 0.2 else ""), False
        if choice == 2:
            return f"INSERT INTO t3 (h, g) SELECT b, a FROM t1 WHERE {self.predicate('t1')}", False
        if choice == 3:
            value = self.r.choice(["n + 1", self.int(), "g", "DEFAULT"])
            return f"UPDATE t3 SET n = {value} WHERE {pred()}" + (" RETURNING h, n" if self.r.random() < 0.2 else ""), False
        if choice == 4:
            return f"DELETE FROM t3 WHERE {pred()}", False
        if choice == 5:
            return f"SELECT * FROM t3 WHERE {pred()}", False
        return "SELECT g, count(*), sum(n), min(h) FROM t3 GROUP BY g", False

    def set_operation(self):
        op = self.r.choice(["UNION", "UNION ALL", "INTERSECT", "EXCEPT", "INTERSECT ALL", "EXCEPT ALL"])
        return (f"SELECT a FROM t1 WHERE {self.predicate('t1')} {op} SELECT v FROM t2 WHERE {self.predicate('t2')}"),\
            False

    def functions(self):
        """Numeric, text, date and conditional functions both engines have, over columns and constants."""
        # Doubles and numerics, the quotients of integers by a constant with a fraction among them.
        c = self.r.choice(["c", "c * 3", "(c - 0.5)", "(a / 4.0::double precision)", "(a / 4.0::numeric)", "(a / 3.0)",
                           "(a * 1.25)"])
        n = self.r.choice(["a", "e", "k"])
        t = self.r.choice(["b", "upper(b)", "'x,y,z'"])
        items = self.r.sample([
            f"round({c})", f"floor({c})", f"ceil({c})", f"trunc({c})", f"sign({c})", f"abs({c})",
            f"round(({c})::numeric, 1)", f"({c})::bigint", f"({c})::integer", f"sqrt(abs(({c})::double precision))",
            f"power(({c})::double precision, 2)", f"round(sqrt(abs({n}) + 0.5), 8)", f"round(ln(abs({n}) + 1.5), 8)",
            f"round(exp({n} % 5 + 0.5), 8)", f"round(power(abs({n}) % 7 + 0.5, 1.5), 8)", f"round(log(abs({n}) + 2.5), 8)",
            f"mod({n}, 3)", f"{n} / 2", f"({n} + 0.5)::numeric", f"({n})::double precision / 4",
            f"lpad({t}, 4, '*')", f"rpad({t}, 3)", f"left({t}, 2)", f"right({t}, 2)", f"reverse({t})",
            f"strpos({t}, 'b')", f"split_part({t}, ',', 2)", f"initcap({t})", f"repeat({t}, 2)", f"btrim({t}, 'a')",
            f"ltrim({t}, 'x')", f"md5({t})", f"char_length({t})", f"octet_length({t})", f"ascii({t})",
            f"starts_with({t}, 'a')", f"{t} || {n}", f"nullif({n}, 1)", f"{n} IS DISTINCT FROM e",
            f"{n} IS NOT DISTINCT FROM 3", f"d IS TRUE", f"d IS NOT FALSE", f"d IS UNKNOWN", f"NOT d",
            f"(d AND {n} > 3)", f"(d OR {n} > 3)", f"{n} IN (1, NULL, 3)", f"{n} NOT IN (1, NULL)",
            f"CASE {n} WHEN 1 THEN 'one' WHEN 2 THEN 'two' END",
            f"date '2024-02-28' + ({n} % 40)::integer", f"extract(dow from date '2024-01-01' + ({n} % 40)::integer)",
            f"date_trunc('month', (date '2024-03-15' + ({n} % 40)::integer)::timestamp)",
            f"to_char(date '2024-01-01' + ({n} % 40)::integer, 'YYYY-MM-DD')",
            f"(date '2024-01-01' + ({n} % 40)::integer) - date '2023-12-25'",
        ], self.r.randint(1, 3))
        return f"SELECT k, {', '.join(items)} FROM t1 WHERE {self.predicate('t1')}", False

    def ordered(self):
        """ORDER BY other columns than the key, NULLs placed either way, the key breaking ties."""
        table = self.r.choice(list(TABLES))
        _, key, cols = TABLES[table]
        col = self.r.choice([c for c in cols if c not in key and c != "d"])
        order = f"{col}{self.r.choice(['', ' DESC'])}{self.r.choice(['', ' NULLS FIRST', ' NULLS LAST'])}"
        sql = f"SELECT {', '.join(cols)} FROM {table} WHERE {self.predicate(table)} ORDER BY {order}, {', '.join(key)}"
        if self.r.random() < 0.5:
            sql += f" LIMIT {self.r.randint(0, 4)} OFFSET {self.r.randint(0, 3)}"
        return sql, True

    def grouped(self):
        """GROUP BY with HAVING, ordered by the group, and a CTE over it."""
        group = self.r.choice(["a", "b", "d", "e", "a % 3"])
        having = self.r.choice(["count(*) > 1", "sum(k) > 5", "min(k) < 3", "count(c) = 0", "max(b) > 'a'"])
        sql = (f"SELECT {group} AS g, count(*), sum(k), min(b), max(c) FROM t1 GROUP BY {group} HAVING {having}"
               f" ORDER BY g{self.r.choice(['', ' DESC'])}")
        if self.r.random() < 0.3:
            sql = f"WITH s AS ({sql}) SELECT count(*), sum(g) FROM s" if group != "b" and group != "d" else \
                f"WITH s AS ({sql}) SELECT count(*) FROM s"
        return sql, True


QUERIES = {"subquery": Gen.subquery, "set operation": Gen.set_operation, "functions": Gen.functions,
           "ordered": Gen.ordered, "grouped": Gen.grouped, "keyless": Gen.keyless}


def normalise(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return float(f"{v:.9g}")
    if isinstance(v, decimal.Decimal):
        # A numeric's text, its scale included: 0.50 and 0.5 differ.
        return ("numeric", str(v))
    return v


def outcome(conn, sql, ordered):
    """What a statement gives: ('ok', rowcount, column names, rows) or ('error', sqlstate)."""
    try:
        cur = conn.execute(sql)
        rows = [tuple(normalise(v) for v in r) for r in cur.fetchall()] if cur.description else []
        if not ordered:
            rows.sort(key=repr)
        names = [c.name for c in cur.description or []]
        return ("ok", cur.rowcount if cur.description is None else len(rows), names, rows)
    except psycopg.Error as e:
        return ("error", e.sqlstate)


def snapshot(conn):
    out = {}
    for t, (_, key, cols) in TABLES.items():
        out[t] = outcome(conn, f"SELECT {', '.join(cols)} FROM {t} ORDER BY {', '.join(key)}", True)
    for t, (_, cols) in KEYLESS.items():
        out[t] = outcome(conn, f"SELECT {', '.join(cols)} FROM {t}", False)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tabula", type=int, required=True)
    ap.add_argument("--postgres", type=int, required=True)
    ap.add_argument("--postgres-user", default="postgres")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--statements", type=int, default=2000)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    gen = Gen(rng)
    tab = psycopg.connect(f"host=127.0.0.1 port={args.tabula} user=tabula dbname=tabula", autocommit=True)
    pg = psycopg.connect(f"host=127.0.0.1 port={args.postgres} user={args.postgres_user} dbname=postgres", autocommit=True)
    for conn in (tab, pg):
        for t, ddl in [(t, ddl) for t, (ddl, _, _) in TABLES.items()] + [(t, ddl) for t, (ddl, _) in KEYLESS.items()]:
            conn.execute(f"DROP TABLE IF EXISTS {t}")
            conn.execute(ddl)
    tried = refused = 0
    differences = []
    recent = []

    def run(sql, ordered=False):
        """Runs a statement on both; whether Tabula refused it (0A000) where PostgreSQL did not."""
        nonlocal tried, refused
        tried += 1
        a, b = outcome(tab, sql, ordered), outcome(pg, sql, ordered)
        recent.append(f"{sql}  -> tabula {a[0]} {a[1]}")
        del recent[:-6]
        if a == b:
            return False
        if a == ("error", "0A000"):
            refused += 1
            return True
        differences.append(("\n    ".join(recent), a, b))
        return False

    for sql in NAMED:
        run(sql)
    while tried < args.statements:
        if rng.random() < 0.15:
            # A transaction, sometimes with an error in it, that commits or rolls back.
            run("BEGIN")
            end = rng.choice(["COMMIT", "ROLLBACK"])
            for _ in range(rng.randint(1, 5)):
                if rng.random() < 0.15:
                    run(rng.choice(["SELECT 1 / 0", "SELECT nosuchcolumn FROM t1", "INSERT INTO t1 (k) VALUES (NULL)",
                                    "SELECT * FROM nosuchtable"]))
                else:
                    sql, ordered = gen.statement()
                    if run(sql, ordered):
                        # A refusal aborts Tabula's transaction and not PostgreSQL's: both roll back.
                        end = "ROLLBACK"
                        break
            run(end)
            a, b = snapshot(tab), snapshot(pg)
            if a != b:
                differences.append(("(tables after the transaction)", a, b))
        else:
            sql, ordered = gen.statement()
            run(sql, ordered)
        if len(differences) >= 20:
            break
    a, b = snapshot(tab), snapshot(pg)
    if a != b:
        differences.append(("(tables at the end)", a, b))
    for sql, x, y in differences:
        print(f"DIFFERENCE\n  statement: {sql}\n  tabula:    {x}\n  postgres:  {y}")
    print(f"oracle: seed {args.seed}: {tried} statements tried, {refused} refused with 0A000, {len(differences)} differences")
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
