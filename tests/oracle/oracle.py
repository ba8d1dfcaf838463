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
    "avg of integers": "Tabula's avg of integers is double precision, PostgreSQL's numeric: avg is taken of doubles only",
    "identity counters": "generated keys count per partition-key value and move past given values: no identity columns",
    "ADD COLUMN DEFAULT": "refused by Tabula (existing rows would not get it): not generated",
    "correlated subqueries": "one finding several rows returns their maximum in Tabula: not generated",
    "evaluation order": "PostgreSQL does not define which condition of an AND it evaluates first, so an error in "
                        "one (a division by zero) may or may not be raised: divisors are never zero, and the "
                        "errors a transaction meets are raised by statements of their own",
    "constant folding": "PostgreSQL evaluates constant subexpressions while planning, so 1 / 0 fails even where no "
                        "row reaches it; Tabula evaluates them per row: follows from the rule above",
    "min and max of boolean": "PostgreSQL has none (42883); Tabula's analytic engine has: not generated",
}

TABLES = {
    "t1": ("CREATE TABLE t1 (k bigint PRIMARY KEY, a bigint, b text, c double precision, "
           "d boolean DEFAULT true, e bigint DEFAULT 7)", ["k"], ["k", "a", "b", "c", "d", "e"]),
    "t2": ("CREATE TABLE t2 (p text, q bigint, v bigint, w text DEFAULT 'none', PRIMARY KEY (p, q))",
           ["p", "q"], ["p", "q", "v", "w"]),
}
INTS = {"k", "a", "e", "q", "v"}
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
        kind = self.r.choices(["insert", "upsert", "update", "delete", "select", "aggregate", "join", "values"],
                              [5, 2, 4, 1, 6, 3, 2, 1])[0]
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
                # One row per key: PostgreSQL refuses a second proposal for a row in one statement.
                sql = f"INSERT INTO {table} ({', '.join(chosen)}) VALUES {rows[0]} ON CONFLICT ({', '.join(key)}) {action}"
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


def normalise(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return float(f"{v:.9g}")
    if isinstance(v, decimal.Decimal):
        return float(f"{float(v):.9g}")
    return v


def outcome(conn, sql, ordered):
    """What a statement gives: ('ok', rowcount, rows) or ('error', sqlstate)."""
    try:
        cur = conn.execute(sql)
        rows = [tuple(normalise(v) for v in r) for r in cur.fetchall()] if cur.description else []
        if not ordered:
            rows.sort(key=repr)
        return ("ok", cur.rowcount if cur.description is None else len(rows), rows)
    except psycopg.Error as e:
        return ("error", e.sqlstate)


def snapshot(conn):
    out = {}
    for t, (_, key, cols) in TABLES.items():
        out[t] = outcome(conn, f"SELECT {', '.join(cols)} FROM {t} ORDER BY {', '.join(key)}", True)
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
        for t, (ddl, _, _) in TABLES.items():
            conn.execute(f"DROP TABLE IF EXISTS {t}")
            conn.execute(ddl)
    tried = refused = 0
    differences = []
    recent = []

    def run(sql, ordered=False):
        nonlocal tried, refused
        tried += 1
        a, b = outcome(tab, sql, ordered), outcome(pg, sql, ordered)
        recent.append(f"{sql}  -> tabula {a[0]} {a[1]}")
        del recent[:-6]
        if a == b:
            return
        if a == ("error", "0A000"):
            refused += 1
            return
        differences.append(("\n    ".join(recent), a, b))

    while tried < args.statements:
        if rng.random() < 0.15:
            # A transaction, sometimes with an error in it, that commits or rolls back.
            run("BEGIN")
            for _ in range(rng.randint(1, 5)):
                if rng.random() < 0.15:
                    run(rng.choice(["SELECT 1 / 0", "SELECT nosuchcolumn FROM t1", "INSERT INTO t1 (k) VALUES (NULL)",
                                    "SELECT * FROM nosuchtable"]))
                else:
                    sql, ordered = gen.statement()
                    run(sql, ordered)
            run(rng.choice(["COMMIT", "ROLLBACK"]))
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
