"""Python drivers against a running Tabula: psycopg 3, psycopg2, asyncpg, pandas.read_sql.

Usage: python3 clients.py PORT
"""
import asyncio
import decimal
import sys

PORT = int(sys.argv[1])
DSN = f"host=127.0.0.1 port={PORT} user=tabula dbname=tabula"


def check(label, got, want):
    if got != want:
        raise AssertionError(f"{label}: got {got!r}, want {want!r}")


def psycopg3():
    import psycopg

    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute("CREATE TABLE py3 (k bigint PRIMARY KEY, name text, price numeric, ok boolean)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO py3 VALUES (%s, %s, %s, %s)", [(i, f"n{i}", decimal.Decimal("1.25") * i, i % 2 == 0) for i in range(10)])
            cur.execute("SELECT k, name, price, ok FROM py3 WHERE k = %s", (3,))
            check("psycopg3 row", cur.fetchone(), (3, "n3", decimal.Decimal("3.75"), False))
            cur.execute("SELECT k FROM py3 WHERE k >= %s ORDER BY k DESC LIMIT 3", (5,))
            check("psycopg3 range", [r[0] for r in cur.fetchall()], [9, 8, 7])
            # Binary results.
            with conn.cursor(binary=True) as bcur:
                bcur.execute("SELECT k, name FROM py3 WHERE k = %s", (4,))
                check("psycopg3 binary", bcur.fetchone(), (4, "n4"))
        try:
            conn.execute("INSERT INTO py3 VALUES (1, 'dup', 0, true)")
            raise AssertionError("duplicate accepted")
        except psycopg.errors.UniqueViolation:
            pass
        # A transaction.
        conn.autocommit = False
        with conn.transaction():
            conn.execute("UPDATE py3 SET name = 'tx' WHERE k = 0")
        check("psycopg3 tx", conn.execute("SELECT name FROM py3 WHERE k = 0").fetchone()[0], "tx")


def psycopg2_and_pandas():
    import pandas
    import psycopg2
    import psycopg2.errors

    conn = psycopg2.connect(DSN)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("CREATE TABLE py2 (k bigint PRIMARY KEY, city text, temp double precision)")
    cur.execute("INSERT INTO py2 VALUES (1, 'Oslo', -3.5), (2, 'Rome', 18.25), (3, 'Lima', NULL)")
    cur.execute("SELECT city, temp FROM py2 WHERE k IN (1, 3) ORDER BY k")
    check("psycopg2 rows", cur.fetchall(), [("Oslo", -3.5), ("Lima", None)])
    try:
        cur.execute("SELECT * FROM nowhere")
        raise AssertionError("missing table accepted")
    except psycopg2.errors.UndefinedTable:
        pass
    df = pandas.read_sql("SELECT k, city, temp FROM py2", conn)
    check("pandas shape", df.shape, (3, 3))
    check("pandas cities", list(df["city"]), ["Oslo", "Rome", "Lima"])
    conn.close()


async def asyncpg_binary():
    import asyncpg

    conn = await asyncpg.connect(host="127.0.0.1", port=PORT, user="tabula", database="tabula")
    await conn.execute("CREATE TABLE apg (k bigint PRIMARY KEY, payload bytea, score real, at timestamp)")
    import datetime

    at = datetime.datetime(2024, 1, 2, 3, 4, 5, 600000)
    stmt = await conn.prepare("INSERT INTO apg VALUES ($1, $2, $3, $4)")
    for i in range(5):
        await stmt.fetch(i, bytes([i, 255]), i * 0.5, at)
    row = await conn.fetchrow("SELECT k, payload, score, at FROM apg WHERE k = $1", 3)
    check("asyncpg row", (row["k"], row["payload"], row["score"], row["at"]), (3, bytes([3, 255]), 1.5, at))
    rows = await conn.fetch("SELECT k FROM apg WHERE k > $1", 2)
    check("asyncpg range", [r["k"] for r in rows], [3, 4])
    try:
        await conn.execute("INSERT INTO apg VALUES (1, NULL, NULL, NULL)")
        raise AssertionError("duplicate accepted")
    except asyncpg.exceptions.UniqueViolationError:
        pass
    await conn.close()


psycopg3()
psycopg2_and_pandas()
asyncio.run(asyncpg_binary())
print("python clients ok")
