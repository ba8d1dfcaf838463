"""Python drivers against a running Tabula: psycopg 3, psycopg2, asyncpg, pandas (read_sql, to_sql), SQLAlchemy
(inspect(), the ORM with its default integer key); the session's TimeZone as libpq and psycopg use it.

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
            # A list as an array parameter (`= ANY(%s)`), of integers and of strings, with ALL and in a join.
            cur.execute("SELECT k FROM py3 WHERE k = ANY(%s) ORDER BY k", ([2, 5, 7, 42],))
            check("psycopg3 = ANY(ints)", [r[0] for r in cur.fetchall()], [2, 5, 7])
            cur.execute("SELECT count(*) FROM py3 WHERE name = ANY(%s)", (["n1", "n3", "none"],))
            check("psycopg3 = ANY(strings)", cur.fetchone()[0], 2)
            cur.execute("SELECT count(*) FROM py3 WHERE k <> ALL(%s)", ([0, 1],))
            check("psycopg3 <> ALL(ints)", cur.fetchone()[0], 8)
            cur.execute("SELECT count(*) FROM py3 a JOIN py3 b ON a.k = b.k WHERE a.k = ANY(%s)", ([1, 2],))
            check("psycopg3 = ANY in a join", cur.fetchone()[0], 2)
            # Parameters in a FROM function's arguments, prepared on the server (psycopg's `prepare=True`,
            # as it does itself for a query run five times), and in the query of INSERT ... SELECT.
            for n in (3, 5):
                cur.execute("SELECT count(*), sum(g) FROM generate_series(1, %s::int) g", (n,), prepare=True)
                check("psycopg3 generate_series(1, %s) prepared", cur.fetchone(), (n, n * (n + 1) // 2))
            cur.execute("INSERT INTO py3 SELECT g, %s, 0, true FROM generate_series(100, %s) g", ("gen", 102))
            check("psycopg3 INSERT ... SELECT with parameters", cur.rowcount, 3)
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
        conn.commit()


def psycopg3_prepared_then_rollback():
    """With its default settings psycopg 3 prepares a query run 5 times, and after a ROLLBACK it sends
    DEALLOCATE ALL (the server may have lost them): that must work, and the query be prepared again."""
    import psycopg

    with psycopg.connect(DSN) as conn:
        conn.execute("CREATE TABLE py3prep (k bigint PRIMARY KEY, v text)")
        conn.commit()
        for i in range(8):
            conn.execute("INSERT INTO py3prep VALUES (%s, %s)", (i, f"v{i}"))
        conn.rollback()
        check("psycopg3 rolled back", conn.execute("SELECT count(*) FROM py3prep").fetchone()[0], 0)
        for i in range(8):
            conn.execute("INSERT INTO py3prep VALUES (%s, %s)", (i, f"v{i}"))
        conn.commit()
        check("psycopg3 prepared again", conn.execute("SELECT count(*) FROM py3prep").fetchone()[0], 8)


def server_side_cursors():
    """Named (server-side) cursors: psycopg 3 and psycopg2 DECLARE a cursor and FETCH from it in batches,
    and SQLAlchemy's stream_results goes through them; psycopg 3 also describes the cursor's portal."""
    import psycopg
    import psycopg2
    import sqlalchemy as sa

    with psycopg.connect(DSN) as conn:
        conn.execute("CREATE TABLE py3cur (k bigint PRIMARY KEY, v text)")
        conn.execute("INSERT INTO py3cur SELECT g, 'v' || g FROM generate_series(1, 250) g")
        conn.commit()
        with conn.cursor(name="py3_named") as cur:
            cur.itersize = 40
            cur.execute("SELECT k, v FROM py3cur WHERE k > %s ORDER BY k", (10,))
            check("named cursor columns", [c.name for c in cur.description], ["k", "v"])
            check("named cursor first", cur.fetchone(), (11, "v11"))
            check("named cursor many", [r[0] for r in cur.fetchmany(3)], [12, 13, 14])
            cur.scroll(2)
            check("named cursor rest", [r[0] for r in cur], list(range(17, 251)))
        conn.commit()
        with conn.cursor(name="py3_held", withhold=True) as cur:
            cur.execute("SELECT count(*) FROM py3cur")
            conn.commit()
            check("held cursor after commit", cur.fetchone()[0], 250)
    conn2 = psycopg2.connect(DSN)
    with conn2.cursor(name="py2_named") as cur:
        cur.itersize = 64
        cur.execute("SELECT k FROM py3cur ORDER BY k")
        check("psycopg2 named cursor", sum(r[0] for r in cur), 250 * 251 // 2)
    conn2.commit()
    conn2.close()
    engine = sa.create_engine(f"postgresql+psycopg://tabula@127.0.0.1:{PORT}/tabula")
    with engine.connect() as conn:
        result = conn.execution_options(stream_results=True, max_row_buffer=50).execute(sa.text("SELECT k FROM py3cur ORDER BY k"))
        check("sqlalchemy stream_results", [r[0] for r in result][-3:], [248, 249, 250])


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


def sqlalchemy_inspect(driver):
    """SQLAlchemy's reflection runs its pg_catalog queries (on the analytic engine). psycopg2 sends them
    with the values written in, psycopg 3 with server-side parameters."""
    import sqlalchemy as sa

    engine = sa.create_engine(f"postgresql+{driver}://tabula@127.0.0.1:{PORT}/tabula")
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE IF EXISTS sa_devices"))
        conn.execute(sa.text(
            "CREATE TABLE sa_devices (site text, id bigint, name varchar NOT NULL, temp double precision, "
            "active boolean DEFAULT true, PRIMARY KEY (site, id))"
        ))
    insp = sa.inspect(engine)
    check("schemas", "public" in insp.get_schema_names(), True)
    check("has_table", (insp.has_table("sa_devices"), insp.has_table("nope")), (True, False))
    check("tables", "sa_devices" in insp.get_table_names(), True)
    cols = insp.get_columns("sa_devices")
    check("column names", [c["name"] for c in cols], ["site", "id", "name", "temp", "active"])
    check("column types", [type(c["type"]).__name__ for c in cols], ["TEXT", "BIGINT", "VARCHAR", "DOUBLE_PRECISION", "BOOLEAN"])
    check("nullable", [c["nullable"] for c in cols], [False, False, False, True, True])
    check("default", cols[4]["default"], "true")
    pk = insp.get_pk_constraint("sa_devices")
    check("primary key", (pk["name"], pk["constrained_columns"]), ("sa_devices_pkey", ["site", "id"]))
    check("foreign keys", insp.get_foreign_keys("sa_devices"), [])
    # Reflection builds a usable Table.
    table = sa.Table("sa_devices", sa.MetaData(), autoload_with=engine)
    with engine.begin() as conn:
        conn.execute(table.insert().values(site="lab", id=1, name="probe", temp=21.5))
        row = conn.execute(sa.select(table.c.name, table.c.active).where(table.c.site == "lab", table.c.id == 1)).one()
    # The DEFAULT applies, as in PostgreSQL (it was ignored once, and this read None).
    check("reflected table round trip", tuple(row), ("probe", True))


def sqlalchemy_orm_serial_key(driver):
    """The ORM's default model: an integer primary key, which SQLAlchemy creates as SERIAL and reads back
    with RETURNING. Keys are handed out as PostgreSQL's sequence hands them out."""
    import sqlalchemy as sa
    from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

    class Base(DeclarativeBase):
        pass

    class Note(Base):
        __tablename__ = f"orm_notes_{driver}"
        id: Mapped[int] = mapped_column(primary_key=True)
        body: Mapped[str]
        slug: Mapped[str | None] = mapped_column(unique=True)
        tag: Mapped[str | None] = mapped_column(index=True)

    engine = sa.create_engine(f"postgresql+{driver}://tabula@127.0.0.1:{PORT}/tabula")
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    with Session(engine) as s:
        notes = [Note(body=t) for t in ["a", "b", "c"]]
        s.add_all(notes)
        s.commit()
        check("orm ids", [n.id for n in notes], [1, 2, 3])
        s.delete(notes[0])
        notes[1].body = "B"
        s.commit()
        check("orm rows", [(n.id, n.body) for n in s.scalars(sa.select(Note).order_by(Note.id))], [(2, "B"), (3, "c")])
        one = Note(body="d")
        s.add(one)
        s.commit()
        check("orm next id", one.id, 4)
        # unique=True is a UNIQUE constraint, index=True an index: both made by create_all, both at work.
        notes[1].slug, notes[1].tag = "same", "t"
        s.commit()
        s.add(Note(body="e", slug="same"))
        try:
            s.commit()
            raise AssertionError("a second row with the same slug")
        except sa.exc.IntegrityError as e:
            check("orm unique", e.orig.diag.constraint_name, f"orm_notes_{driver}_slug_key")
            s.rollback()
        check("orm by index", [n.id for n in s.scalars(sa.select(Note).where(Note.tag == "t"))], [2])
    inspector = sa.inspect(engine)
    check("orm inspected unique", [c["column_names"] for c in inspector.get_unique_constraints(f"orm_notes_{driver}")], [["slug"]])
    # (Names only: the inspector reads arrays of booleans, which reach it as text[]; issue 30's arrays.)
    names = sorted(i["name"] for i in inspector.get_indexes(f"orm_notes_{driver}"))
    check("orm inspected indexes", names, [f"ix_orm_notes_{driver}_tag", f"orm_notes_{driver}_slug_key"])


def pandas_to_sql():
    """DataFrame.to_sql makes a table without a primary key, then replaces and appends to it; with its default
    index=True it also creates an index on the index column, which lookups then use."""
    import pandas
    import sqlalchemy as sa

    engine = sa.create_engine(f"postgresql+psycopg2://tabula@127.0.0.1:{PORT}/tabula")
    df = pandas.DataFrame({"city": ["Oslo", "Rome"], "temp": [-3.5, 18.25]})
    df.to_sql("pd_cities", engine, index=False, if_exists="replace")
    df.to_sql("pd_cities", engine, index=False, if_exists="append")
    back = pandas.read_sql("SELECT city, temp FROM pd_cities ORDER BY city", engine)
    check("to_sql append", (list(back["city"]), list(back["temp"])), (["Oslo", "Oslo", "Rome", "Rome"], [-3.5, -3.5, 18.25, 18.25]))
    pandas.DataFrame({"city": ["Lima", "Quito"], "rain": [None, 2.5]}).to_sql("pd_cities", engine, if_exists="replace")
    back = pandas.read_sql("SELECT * FROM pd_cities WHERE index = 1", engine)
    check("to_sql replace with its index", (list(back.columns), list(back["city"])), (["index", "city", "rain"], ["Quito"]))
    indexes = pandas.read_sql("SELECT indexname FROM pg_indexes WHERE tablename = 'pd_cities'", engine)
    check("to_sql index", list(indexes["indexname"]), ["ix_pd_cities_index"])
    # A replace that fails half way (array columns are not built) drops and creates the table in one
    # transaction: it is rolled back whole, and the old table and its rows are still there.
    try:
        pandas.DataFrame({"n": [[1, 2]]}).to_sql("pd_cities", engine, if_exists="replace", dtype={"n": sa.ARRAY(sa.Integer)})
        raise AssertionError("array columns are not built: the replace should fail")
    except sa.exc.NotSupportedError:
        pass
    back = pandas.read_sql("SELECT * FROM pd_cities ORDER BY index", engine)
    check("to_sql failed replace", (list(back.columns), list(back["city"])), (["index", "city", "rain"], ["Lima", "Quito"]))


def copy_into_an_indexed_table():
    """COPY into a table with a secondary index (a bulk load that writes the entries with the rows): its rows
    are found through the index at once, and from the entries alone when they hold every column read."""
    import psycopg

    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS py_ix")
        conn.execute("CREATE TABLE py_ix (k bigint PRIMARY KEY, tag text)")
        conn.execute("CREATE INDEX ON py_ix (tag)")
        with conn.cursor().copy("COPY py_ix (k, tag) FROM STDIN") as copy:
            for k in range(500):
                copy.write_row((k, f"t{k % 5}"))
        got = conn.execute("SELECT count(*), min(k) FROM py_ix WHERE tag = 't3'").fetchone()
        check("copy then index lookup", got, (100, 3))
        plan = [r[0] for r in conn.execute("EXPLAIN SELECT k FROM py_ix WHERE tag = 't3'")]
        check("index-only scan", any("IndexOnlyScan" in line for line in plan), True)


def binary_copy():
    """COPY in PostgreSQL's binary format both ways: psycopg's binary copy (every stored type, NULLs, text
    with tabs and newlines) and asyncpg's copy_records_to_table, which always loads in binary."""
    import datetime
    import uuid

    import psycopg
    from psycopg.types.json import Jsonb

    types = ["int8", "int4", "int2", "text", "float8", "float4", "numeric", "bool", "timestamp", "timestamptz", "date", "uuid", "bytea", "jsonb"]
    utc = datetime.timezone.utc
    row = (1, 2, 3, "a\tb\nc", 1.5, 2.5, decimal.Decimal("3.25"), True, datetime.datetime(2024, 1, 2, 3, 4, 5),
           datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=utc), datetime.date(2024, 1, 2), uuid.UUID(int=7), b"\x00\xff", {"a": [1, None]})
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS py_bin")
        conn.execute("CREATE TABLE py_bin (k bigint PRIMARY KEY, i int, s smallint, t text, f float8, r real, n numeric, b bool, "
                     "ts timestamp, tz timestamptz, d date, u uuid, by bytea, j jsonb)")
        with conn.cursor() as cur:
            with cur.copy("COPY py_bin FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(types)
                copy.write_row(row[:-1] + (Jsonb(row[-1]),))
                copy.write_row((2,) + (None,) * 13)
            check("binary copy in: count", cur.rowcount, 2)
            with cur.copy("COPY (SELECT * FROM py_bin ORDER BY k) TO STDOUT (FORMAT BINARY)") as copy:
                copy.set_types(types)
                got = list(copy.rows())
            check("binary copy out", got, [row, (2,) + (None,) * 13])
            check("binary copy out: count", cur.rowcount, 2)
            # The count is of rows: not the signature sent alone when there are none, nor a CSV header line.
            with cur.copy("COPY (SELECT * FROM py_bin WHERE k < 0) TO STDOUT (FORMAT BINARY)") as copy:
                check("binary copy out of no rows", list(copy.rows()), [])
            check("binary copy out of no rows: count", cur.rowcount, 0)
            for where, rows in (("k < 0", 0), ("k > 0", 2)):
                with cur.copy(f"COPY (SELECT k FROM py_bin WHERE {where}) TO STDOUT (FORMAT csv, HEADER)") as copy:
                    data = b"".join(bytes(b) for b in copy)
                check(f"csv copy out with a header, {rows} rows", (data, cur.rowcount), (b"k\n1\n2\n"[: 2 + 2 * rows], rows))
            check("binary copy in: text", conn.execute("SELECT t, j::text FROM py_bin WHERE k = 1").fetchone(), ("a\tb\nc", '{"a": [1, null]}'))
            # Damaged data (no PGCOPY signature) is 22P04, and nothing of it is written.
            try:
                with cur.copy("COPY py_bin (k) FROM STDIN (FORMAT BINARY)") as copy:
                    copy.write(b"not a binary copy stream at all")
                raise AssertionError("damaged binary copy accepted")
            except psycopg.errors.BadCopyFileFormat:
                pass
            check("damaged binary copy: nothing written", conn.execute("SELECT count(*) FROM py_bin").fetchone()[0], 2)

    async def load():
        import asyncpg

        conn = await asyncpg.connect(host="127.0.0.1", port=PORT, user="tabula", database="tabula")
        try:
            await conn.execute("DROP TABLE IF EXISTS py_bin2; CREATE TABLE py_bin2 (k bigint PRIMARY KEY, v text, x float8)")
            await conn.copy_records_to_table("py_bin2", records=[(k, f"v{k}", k / 4) for k in range(1000)] + [(1000, None, None)])
            return await conn.fetchrow("SELECT count(*), count(v), sum(x) FROM py_bin2")
        finally:
            await conn.close()

    check("asyncpg copy_records_to_table", tuple(asyncio.run(load())), (1001, 1000, sum(k / 4 for k in range(1000))))


def time_zones():
    """The session's TimeZone, given at connection (libpq's PGTZ, which it sends in the startup message, and
    `-c TimeZone=...` in options) or by SET: psycopg follows the zone the server reports, reads timestamptz
    values (text and binary) as the instants they are, and a timestamptz's text without an offset is a
    local time in the session's zone."""
    import datetime
    import os
    import zoneinfo

    import psycopg

    instant = datetime.datetime(2024, 7, 15, 12, 0, tzinfo=datetime.timezone.utc)
    os.environ["PGTZ"] = "Asia/Kolkata"
    try:
        with psycopg.connect(DSN, autocommit=True) as conn:
            check("PGTZ: the zone reported", str(conn.info.timezone), "Asia/Kolkata")
            check("PGTZ: a value's text", conn.execute("SELECT %s::timestamptz::text", (instant,)).fetchone()[0], "2024-07-15 17:30:00+05:30")
    finally:
        del os.environ["PGTZ"]
    with psycopg.connect(DSN, autocommit=True, options="-c TimeZone=America/New_York") as conn:
        check("options: SHOW TimeZone", conn.execute("SHOW TimeZone").fetchone()[0], "America/New_York")
        conn.execute("CREATE TABLE py_tz (k int PRIMARY KEY, t timestamptz)")
        conn.execute("INSERT INTO py_tz VALUES (1, %s), (2, %s::timestamptz)", (instant, "2024-07-15 08:00:00"))
        for binary in (False, True):
            rows = conn.cursor(binary=binary).execute("SELECT t FROM py_tz ORDER BY k").fetchall()
            check(f"timestamptz read back (binary={binary})", [r[0] for r in rows], [instant, instant])
            check(f"in the session's zone (binary={binary})", rows[0][0].tzinfo, zoneinfo.ZoneInfo("America/New_York"))
        conn.execute("SET TimeZone = 'Europe/Paris'")
        check("SET: the zone reported", str(conn.info.timezone), "Europe/Paris")
        check("SET: date_trunc in the zone", conn.execute("SELECT date_trunc('day', t)::text FROM py_tz WHERE k = 1").fetchone()[0], "2024-07-15 00:00:00+02")


def intervals_and_parts():
    """Intervals reach psycopg as intervals (timedelta, text and binary) and asyncpg decodes their binary
    form; EXTRACT is a numeric (Decimal) with PostgreSQL's scale; unaliased columns have PostgreSQL's names."""
    import datetime
    import decimal

    import asyncpg
    import psycopg

    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute("CREATE TABLE py_iv (k int PRIMARY KEY, a timestamp, b timestamp)")
        conn.execute("INSERT INTO py_iv VALUES (1, '2024-01-01', '2024-01-02 01:00:00.5')")
        for binary in (False, True):
            cur = conn.cursor(binary=binary)
            row = cur.execute("SELECT b - a, interval '-1 day 2 hours', extract(epoch FROM b), upper('x') FROM py_iv").fetchone()
            check(f"interval values (binary={binary})", row[:2],
                  (datetime.timedelta(days=1, hours=1, microseconds=500_000), datetime.timedelta(days=-1, hours=2)))
            check(f"extract is a numeric (binary={binary})", row[2], decimal.Decimal("1704157200.500000"))
            check(f"column names (binary={binary})", [c.name for c in cur.description], ["?column?", "interval", "extract", "upper"])

    async def read():
        conn = await asyncpg.connect(host="127.0.0.1", port=PORT, user="tabula", database="tabula")
        try:
            return await conn.fetchval("SELECT b - a FROM py_iv")
        finally:
            await conn.close()

    check("asyncpg interval", asyncio.run(read()), datetime.timedelta(days=1, hours=1, microseconds=500_000))


psycopg3()
psycopg3_prepared_then_rollback()
server_side_cursors()
psycopg2_and_pandas()
sqlalchemy_inspect("psycopg2")
sqlalchemy_inspect("psycopg")
asyncio.run(asyncpg_binary())
sqlalchemy_orm_serial_key("psycopg")
sqlalchemy_orm_serial_key("psycopg2")
pandas_to_sql()
copy_into_an_indexed_table()
binary_copy()
time_zones()
intervals_and_parts()
print("python clients ok")
