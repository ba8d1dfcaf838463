#!/usr/bin/env python3
"""Tabula side by side with a throwaway PostgreSQL, interleaved round by round.

Both servers run on this machine on loopback ports. Data is loaded by the suite's own schema and COPY, then
pgbench runs each workload's custom script against Tabula, then PostgreSQL, then Tabula again, for every
round. The report (medians, pair-by-pair ratios, peak memory, a chart) goes into BENCHMARKS.md.

    scripts/bench [--rounds 5] [--seconds 10] [--rows 1000000] [--growth-rows 10000000]
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT / "bench" / "workloads"
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "tabula" / "target"))

# name, script (per server when a dict), pgbench protocol, clients, durability ("sync" or "async")
READS = [
    # The prepared point select right after the ceiling: its share of the ceiling is a target, and two runs
    # minutes apart would measure the machine's drift as much as the point get.
    ("wire ceiling: SELECT 1 (prepared)", "wire_ceiling.sql", "prepared", 1, "sync"),
    ("point select (prepared)", "point_select.sql", "prepared", 1, "sync"),
    ("point select (extended)", "point_select.sql", "extended", 1, "sync"),
    ("point select (simple)", "point_select.sql", "simple", 1, "sync"),
    ("point select (prepared, 4 clients)", "point_select.sql", "prepared", 4, "sync"),
    ("batch get: IN list of 10", "batch_get_10.sql", "prepared", 1, "sync"),
    ("range scan of 10 rows", "range_10.sql", "prepared", 1, "sync"),
    ("range scan of 100 rows", "range_100.sql", "prepared", 1, "sync"),
    ("range scan of 1000 rows", "range_1000.sql", "prepared", 1, "sync"),
    ("versioned read: latest 3 versions", {"tabula": "versioned_tabula.sql", "postgres": "versioned_postgres.sql"}, "prepared", 1, "sync"),
    ("secondary index: point select by an indexed column", "index_select.sql", "prepared", 1, "sync"),
    ("secondary index: range of 10 by an indexed column", "index_range_10.sql", "prepared", 1, "sync"),
    ("secondary index: range of 100 by an indexed column", "index_range_100.sql", "prepared", 1, "sync"),
    # The same through an index whose order is not the key's: the rows lie apart in the table.
    ("secondary index: range of 100 in an order apart from the key's", "index_range_100_apart.sql", "prepared", 1, "sync"),
]
WRITES = [
    ("single-row INSERT of new keys (durable)", "insert.sql", "prepared", 1, "sync"),
    ("UPDATE by key (durable)", "update.sql", "prepared", 1, "sync"),
    # Concurrent committers share each log sync (group commit) on both servers.
    ("UPDATE by key (durable, 16 clients)", "update.sql", "prepared", 16, "sync"),
    # One cell of a row whose other cells are few, many, or large: the cost should not grow with the rest.
    ("UPDATE one cell of a narrow row (durable)", "update_wide1.sql", "prepared", 1, "sync"),
    ("UPDATE one cell of a 100-column row (durable)", "update_wide100.sql", "prepared", 1, "sync"),
    ("UPDATE one cell beside 10 MB of other cells (durable)", "update_widebig.sql", "prepared", 1, "sync"),
    # Each write also writes its index entries, in the same transaction on both servers.
    ("secondary index: INSERT into an indexed table (durable)", "index_insert.sql", "prepared", 1, "sync"),
    ("secondary index: UPDATE of an indexed column (durable)", "index_update.sql", "prepared", 1, "sync"),
    ("secondary index: INSERT into a table with 3 indexes (durable)", "index3_insert.sql", "prepared", 1, "sync"),
    ("secondary index: UPDATE of 3 indexed columns (durable)", "index3_update.sql", "prepared", 1, "sync"),
]
ASYNC_WRITES = [
    ("UPDATE by key (async commit)", "update.sql", "prepared", 1, "async"),
    ("single-row upsert (async commit)", "upsert.sql", "prepared", 1, "async"),
    ("single-row upsert (async commit, 16 clients)", "upsert.sql", "prepared", 16, "async"),
]

# pgbench's own scripts on the tables `pgbench -i -s PGBENCH_SCALE` makes (char(n) fillers, keys added
# after the load): its select-only and TPC-B-like transactions. With 4 clients the TPC-B-like script's
# updates of the same branch rows conflict: Tabula's snapshot isolation fails one of two with 40001 and
# pgbench runs it again (`--max-tries`), where PostgreSQL's READ COMMITTED waits for the row.
PGBENCH_SCALE = 10
PGBENCH = [
    ("pgbench built-in select-only (prepared)", "builtin:select-only", "prepared", 1, "sync"),
    ("pgbench built-in TPC-B-like (prepared, durable)", "builtin:tpcb-like", "prepared", 1, "sync"),
    ("pgbench built-in TPC-B-like (prepared, durable, 4 clients)", "builtin:tpcb-like", "prepared", 4, "sync"),
]

CEILING, POINT = READS[0][0], READS[1][0]
CEILING_SCRIPT, POINT_SCRIPT = READS[0][1], READS[1][1]
# The point select on the growth phase's table of `--growth-rows` rows (`kv_big`).
POINT_BIG_SCRIPT = "point_select_big.sql"

SCHEMA_COMMON = [
    "CREATE TABLE kv (k bigint PRIMARY KEY, v text, n bigint)",
    "CREATE TABLE ins (k bigint PRIMARY KEY, v text, n bigint)",
]
# Wide rows: 1,000 narrow rows, 1,000 rows of 100 columns, and 20 rows holding five 2 MB texts each (md5 hex
# repeated: PostgreSQL stores them out of line uncompressed, as Tabula does, so both keep 10 MB a row).
WIDE_ROWS, WIDEBIG_ROWS = 1000, 20
WIDE_COLUMNS = ", ".join(f"c{i} bigint" for i in range(1, 100))
WIDEBIG_COLUMNS = ", ".join(f"b{i} text" for i in range(1, 6))
SCHEMA_WIDE = [
    "CREATE TABLE wide1 (k bigint PRIMARY KEY, n bigint, v text)",
    f"CREATE TABLE wide100 (k bigint PRIMARY KEY, n bigint, {WIDE_COLUMNS})",
    f"CREATE TABLE widebig (k bigint PRIMARY KEY, n bigint, {WIDEBIG_COLUMNS})",
]
# A table with a secondary index: `card` is unique per row, so a lookup finds one row. In `ix` it grows
# with the key (as a time column beside a growing key does); in `ixa` it is a permutation of the keys
# (7919 and the prime 100,003), so the rows of a range of cards lie apart.
INDEX_ROWS = 100_000
SCHEMA_INDEX = [
    "CREATE TABLE ix (k bigint PRIMARY KEY, card bigint, v text)",
    "CREATE INDEX ix_card ON ix (card)",
    "CREATE TABLE ixa (k bigint PRIMARY KEY, card bigint, v text)",
    "CREATE INDEX ixa_card ON ixa (card)",
    # The same rows with three indexed columns: the write overhead of three indexes against one.
    "CREATE TABLE ix3 (k bigint PRIMARY KEY, a bigint, b bigint, c bigint, v text)",
    "CREATE INDEX ix3_a ON ix3 (a)",
    "CREATE INDEX ix3_b ON ix3 (b)",
    "CREATE INDEX ix3_c ON ix3 (c)",
]
SCHEMA = {
    "tabula": SCHEMA_COMMON + SCHEMA_WIDE + SCHEMA_INDEX + ["CREATE TABLE vt (k bigint PRIMARY KEY, v text) WITH (max_versions = 3)"],
    "postgres": SCHEMA_COMMON + SCHEMA_WIDE + SCHEMA_INDEX + [f"ALTER TABLE widebig ALTER COLUMN b{i} SET STORAGE EXTERNAL" for i in range(1, 6)]
    + ["CREATE TABLE vt (k bigint, ver bigint, v text, PRIMARY KEY (k, ver))"],
}


def load_index(server):
    server.psql(f"INSERT INTO ix SELECT g, g * 7, 'row ' || g FROM generate_series(1, {INDEX_ROWS}) g")
    server.psql(f"INSERT INTO ixa SELECT g, (g * 7919) % 100003, 'row ' || g FROM generate_series(1, {INDEX_ROWS}) g")
    server.psql(f"INSERT INTO ix3 SELECT g, g * 7, g % 1000, g % 77, 'row ' || g FROM generate_series(1, {INDEX_ROWS}) g")


BIG_STATEMENTS = "UPDATE and DELETE of every row in one statement"


def big_statements(server, csv, rows, results):
    """Times an UPDATE and then a DELETE of all `rows` rows of a table loaded for them, each one statement
    outside a transaction block, with the server's peak memory while each runs."""
    server.psql("DROP TABLE IF EXISTS big_stmt")
    server.psql("CREATE TABLE big_stmt (k bigint PRIMARY KEY, v text, n bigint)")
    server.psql(f"\\copy big_stmt FROM '{csv}' WITH (FORMAT csv)")
    out = results.setdefault("big_statements", {}).setdefault(server.name, {})
    for key, sql in (("update", "UPDATE big_stmt SET n = n + 1"), ("delete", "DELETE FROM big_stmt")):
        with PeakMemory(server) as mem:
            secs = timed(lambda: server.psql(sql))
        out.setdefault(f"{key}_s", []).append(secs)
        out.setdefault(f"{key}_peak_mb", []).append(mem.mb)
    server.psql("DROP TABLE big_stmt")


IDLE = "idle CPU with a 1 GB partition-key value"
IDLE_ROWS = 1_000_000  # of about 1 KB each, all under one partition-key value
IDLE_WINDOW_S = 10
IDLE_WINDOWS = 18


def write_idle_csv(path):
    """One partition-key value (`dev` 'd0') with IDLE_ROWS rows of a 1000-byte value: about 1 GB. The values
    are random hex, so that the engines' compression does not shrink the partition to nothing."""
    with open(path, "w") as f:
        for start in range(0, IDLE_ROWS, 10_000):
            f.write("".join(f"d0,{i},{os.urandom(500).hex()}\n" for i in range(start, start + 10_000)))


def idle_cpu(server, csv, results):
    """The server's CPU use while nothing happens, after a load of 1 GB under one partition-key value (the
    seeds allow 10 GB under one): IDLE_WINDOWS consecutive windows of IDLE_WINDOW_S seconds, in cores. The
    first windows hold the load's own background work (compaction, autovacuum); the last ones are what the
    server costs at rest with such a partition. Tabula's split must find no cut inside one key value and
    then leave the partition alone until it changes."""
    server.psql("DROP TABLE IF EXISTS idle_big")
    server.psql("CREATE TABLE idle_big (dev text, seq bigint, v text, PRIMARY KEY (dev, seq))")
    load_s = timed(lambda: server.psql(f"\\copy idle_big FROM '{csv}' WITH (FORMAT csv)"))
    hz = os.sysconf("SC_CLK_TCK")
    cores = []
    for _ in range(IDLE_WINDOWS):
        before = server.cpu_ticks()
        time.sleep(IDLE_WINDOW_S)
        cores.append((server.cpu_ticks() - before) / hz / IDLE_WINDOW_S)
    seen = {"load_s": load_s, "cores": cores}
    if server.name == "tabula":
        # That the partition is one key's 1 GB, and what Tabula advises about it.
        seen["partitions"] = server.psql("SELECT approx_bytes, stored_bytes, advice FROM tabula.partitions WHERE table_name = 'idle_big'").strip()
        log(f"  tabula.partitions of idle_big:\n{seen['partitions']}")
    results.setdefault("idle", {})[server.name] = seen
    server.psql("DROP TABLE idle_big")


def load_wide(server):
    server.psql(f"INSERT INTO wide1 SELECT g, 0, repeat('x', 100) FROM generate_series(1, {WIDE_ROWS}) g")
    server.psql(f"INSERT INTO wide100 SELECT g, 0, {', '.join('g' for _ in range(99))} FROM generate_series(1, {WIDE_ROWS}) g")
    big = ", ".join(f"repeat(md5((g * {i})::text), 65536)" for i in range(1, 6))
    for k in range(1, WIDEBIG_ROWS + 1):
        server.psql(f"INSERT INTO widebig SELECT g, 0, {big} FROM generate_series({k}, {k}) g")


def log(msg):
    print(f"[bench {datetime.datetime.now():%H:%M:%S}] {msg}", flush=True)


def run(cmd, env=None, check=True, **kw):
    return subprocess.run(cmd, env=env, check=check, text=True, capture_output=True, **kw)


def bin_path(name):
    for d in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (d / name).exists():
            return str(d / name)
    found = shutil.which(name)
    if not found:
        sys.exit(f"bench: {name} not found: install Debian's postgresql package")
    return found


def proc_kb(pid, file, field):
    """A kB figure from /proc/<pid>/<file>; 0 when the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/{file}").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def children(pid):
    """Processes whose parent is `pid`, read from /proc (no pgrep: a fork per sample would weigh on a small machine)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                # The command name may hold spaces and parentheses: the fields start after the last ')'.
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except (OSError, ValueError, IndexError):
                pass
    return out


def cpu_ticks(pid, reaped=False):
    """CPU time of a process in clock ticks (user + system), with its reaped children's if `reaped`."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12]) + (int(f[13]) + int(f[14]) if reaped else 0)
    except (OSError, ValueError, IndexError):
        return 0


def cmdline(pid):
    """A process's title (PostgreSQL's backends name their user and database there); empty when gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class PeakMemory:
    """Samples a server's resident memory (`Server.memory_kb`) every `every` seconds while a workload runs, in a
    thread; `mb` is the largest sample."""

    def __init__(self, server, every=0.5):
        self.server, self.every, self.kb = server, every, 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while True:
            self.kb = max(self.kb, self.server.memory_kb())
            if self.done.wait(self.every):
                return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        self.kb = max(self.kb, self.server.memory_kb())
        self.server.peak_rss_kb = max(self.server.peak_rss_kb, self.kb)

    @property
    def mb(self):
        return self.kb / 1024


class Server:
    name = ""
    port = 0
    proc = None
    peak_rss_kb = 0

    def pgoptions(self, durability):
        # Both servers take the commit durability per connection.
        return "-c synchronous_commit=off" if durability == "async" else "-c synchronous_commit=on"

    def psql(self, sql, env=None):
        # Through stdin: a statement may be longer than a command line may be.
        r = run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, "-d", self.db, "-f", "-"], env=env, check=False, input=sql + "\n")
        if r.returncode != 0:
            raise RuntimeError(f"{self.name}: {sql[:80]}: {r.stderr.strip()}")
        return r.stdout

    # Settings the report names as each server gives them back (SHOW), rather than as the suite asked for them.
    SETTINGS = ()

    def settings(self):
        out = {}
        for name in self.SETTINGS:
            r = run(["psql", "-X", "-At", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, "-d", self.db, "-c", f"SHOW {name}"], check=False)
            out[name] = r.stdout.strip() if r.returncode == 0 else f"(SHOW failed: {r.stderr.strip()})"
        return out

    def wait_ready(self):
        for _ in range(600):
            if run(["pg_isready", "-h", "127.0.0.1", "-p", str(self.port)], check=False).returncode == 0:
                try:
                    self.psql("SELECT 1")
                    return
                except RuntimeError:
                    pass
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not start")

    def sample_rss(self):
        """Keeps the server's exact peak resident set (VmHWM) for the whole run."""
        pid = self.server_pid()
        if pid:
            self.peak_rss_kb = max(self.peak_rss_kb, proc_kb(pid, "status", "VmHWM:"))

    def memory_kb(self):
        """Resident memory now: one process, so its RSS."""
        pid = self.server_pid()
        return proc_kb(pid, "status", "VmRSS:") if pid else 0

    def server_pid(self):
        return self.proc.pid if self.proc else None

    def settle(self):
        """Waits until what served the last run has ended (nothing to wait for here)."""

    def cpu_ticks(self):
        """CPU time the server has used so far: one process, all its threads."""
        pid = self.server_pid()
        return cpu_ticks(pid) if pid else 0


class Tabula(Server):
    name = "tabula"
    user = "tabula"
    db = "tabula"
    SETTINGS = ("tabula.block_cache_size", "max_connections", "tabula.busy_poll", "wal_writer_delay")

    def __init__(self, workdir, port):
        self.dir = workdir / "tabula-data"
        self.port = port

    def start(self, durability=None):
        # One server for every phase: as on PostgreSQL, each connection picks its commit durability
        # (synchronous_commit, in PGOPTIONS), so no restart comes between phases.
        if self.proc:
            return
        # The same memory for caching table data as PostgreSQL's shared_buffers below.
        args = [str(TARGET / "release" / "tabula"), "--data-dir", str(self.dir), "--listen", f"127.0.0.1:{self.port}", "--log-level", "warn", "--max-connections", "200", "--block-cache-mb", "1024"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.wait_ready()

    def stop(self):
        if self.proc:
            self.sample_rss()
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)
            self.proc = None


class Postgres(Server):
    name = "postgres"
    db = "postgres"
    SETTINGS = ("shared_buffers", "max_connections", "wal_writer_delay")

    def __init__(self, workdir, port):
        self.dir = workdir / "pg-data"
        self.port = port
        self.as_root = os.geteuid() == 0
        self.user = "postgres" if self.as_root else os.environ.get("USER", "postgres")

    def _cmd(self, args):
        # initdb and postgres refuse to run as root: run them as the postgres system user.
        return ["runuser", "-u", "postgres", "--"] + args if self.as_root else args

    def start(self, durability=None):
        if self.proc:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.as_root:
            shutil.chown(self.dir.parent, "postgres")
            shutil.chown(self.dir, "postgres")
        if not (self.dir / "PG_VERSION").exists():
            run(self._cmd([bin_path("initdb"), "-D", str(self.dir), "-U", self.user, "--auth=trust", "-E", "UTF8"]))
        self.proc = subprocess.Popen(
            self._cmd([bin_path("postgres"), "-D", str(self.dir), "-p", str(self.port), "-k", str(self.dir), "-c", "listen_addresses=127.0.0.1",
                       "-c", "shared_buffers=1GB", "-c", "max_connections=200", "-c", "max_wal_size=4GB"]),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.wait_ready()

    def server_pid(self):
        pidfile = self.dir / "postmaster.pid"
        try:
            return int(pidfile.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def settle(self):
        """Waits (up to 5 s) for the run's backends to exit and be reaped: a backend still exiting when the CPU
        time is read is neither among the live children nor in the postmaster's reaped time, and its whole
        run would be missed."""
        pid = self.server_pid()
        for _ in range(50):
            if not pid or not any("postgres: " + self.user in cmdline(c) for c in children(pid)):
                return
            time.sleep(0.1)

    def cpu_ticks(self):
        """CPU time of the postmaster, its live children, and the backends that ended (reaped by it)."""
        pid = self.server_pid()
        if not pid:
            return 0
        return cpu_ticks(pid, reaped=True) + sum(cpu_ticks(c) for c in children(pid))

    def sample_rss(self):
        # Summed peaks of its processes would count the shared buffers once per process that touched them:
        # PostgreSQL's peak is the largest of the samples below.
        self.peak_rss_kb = max(self.peak_rss_kb, self.memory_kb())

    def memory_kb(self):
        """Resident memory now of the postmaster and its children, summed by PSS (proportional set size: a
        shared page counts once, split among the processes that map it), which is RSS for one process."""
        pid = self.server_pid()
        if not pid:
            return 0
        pids = [pid] + children(pid)
        return sum(proc_kb(p, "smaps_rollup", "Pss:") for p in pids)

    def stop(self):
        if self.proc:
            self.sample_rss()
            run(self._cmd([bin_path("pg_ctl"), "-D", str(self.dir), "stop", "-m", "fast"]), check=False)
            self.proc.wait(timeout=120)
            self.proc = None



def pgbench(server, script, protocol, clients, seconds, variables, durability, logdir):
    env = dict(os.environ)
    opts = server.pgoptions(durability)
    if opts:
        env["PGOPTIONS"] = opts
    for f in logdir.glob("pgbench_log*"):
        f.unlink()
    if script.startswith("builtin:"):
        chosen = ["-b", script.removeprefix("builtin:"), "--max-tries", "1000"]
    else:
        chosen = ["-f", str(WORKLOADS / script)]
    args = [bin_path("pgbench"), "-h", "127.0.0.1", "-p", str(server.port), "-U", server.user, "-n", "-M", protocol, "-c", str(clients), "-j", str(clients),
            "-T", str(seconds), *chosen, "-l", "--log-prefix", str(logdir / "pgbench_log")]
    for k, v in variables.items():
        args += ["-D", f"{k}={v}"]
    args.append(server.db)
    ticks = server.cpu_ticks()
    with PeakMemory(server) as mem:
        r = run(args, env=env, check=False)
    server.settle()
    ticks = server.cpu_ticks() - ticks
    if r.returncode != 0:
        raise RuntimeError(f"pgbench on {server.name} ({script}): {r.stderr.strip()[-500:]}")
    tps, count = None, None
    for line in r.stdout.splitlines():
        if line.startswith("tps ="):
            tps = float(line.split()[2])
        if line.startswith("number of transactions actually processed:"):
            count = int(line.split(":")[1].split()[0])
    latencies = []
    for f in logdir.glob("pgbench_log*"):
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3:
                latencies.append(int(parts[2]))
    latencies.sort()
    pct = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] / 1000.0 if latencies else None
    server.sample_rss()
    cpu_us = ticks / os.sysconf("SC_CLK_TCK") * 1e6 / count if count else None
    return {"tps": tps, "p50_ms": pct(0.5), "p99_ms": pct(0.99), "peak_mb": mem.mb, "cpu_us": cpu_us}


def pgbench_mixed(server, scripts, protocol, seconds, variables, logdir):
    """One client running several scripts chosen at random transaction by transaction (pgbench's `-f a@1 -f b@1`),
    so that each script's figure comes from the same seconds as the others': the machine's drift, which moves two
    runs even a few seconds apart by up to 20 %, cancels out. Returns each script's mean latency in ms."""
    lat = pgbench_mixed_latencies(server, scripts, protocol, seconds, variables, logdir)
    return {script: sum(lat[script]) / len(lat[script]) / 1000.0 for script in scripts}


def pgbench_mixed_latencies(server, scripts, protocol, seconds, variables, logdir):
    """pgbench_mixed's run; returns each script's transaction latencies in µs."""
    for f in logdir.glob("pgbench_log*"):
        f.unlink()
    args = [bin_path("pgbench"), "-h", "127.0.0.1", "-p", str(server.port), "-U", server.user, "-n", "-M", protocol, "-c", "1", "-j", "1",
            "-T", str(seconds), "-l", "--log-prefix", str(logdir / "pgbench_log")]
    for script in scripts:
        args += ["-f", f"{WORKLOADS / script}@1"]
    for k, v in variables.items():
        args += ["-D", f"{k}={v}"]
    args.append(server.db)
    r = run(args, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"pgbench on {server.name} ({', '.join(scripts)}): {r.stderr.strip()[-500:]}")
    # The transaction log, in µs (the summary rounds to 1 µs of about 100): client, transaction, latency, script
    # number (in -f order), ...
    lat = [[] for _ in scripts]
    for f in logdir.glob("pgbench_log*"):
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 4:
                lat[int(parts[3])].append(int(parts[2]))
    if not all(lat):
        raise RuntimeError(f"pgbench on {server.name}: a script of {', '.join(scripts)} never ran")
    return dict(zip(scripts, lat))


def csv_lines(start, count):
    """The suite's key-value rows `start` .. `start + count`, in CSV, in chunks of 100,000 lines."""
    for s in range(start, start + count, 100_000):
        yield "".join(f"{k},value-{k},{k % 1000}\n" for k in range(s, min(s + 100_000, start + count)))


def write_csv(path, start, count):
    with open(path, "w") as f:
        f.writelines(csv_lines(start, count))


def write_inserts(path, count, per_statement=1000):
    with open(path, "w") as f:
        for s in range(1, count + 1, per_statement):
            rows = ",".join(f"({k},'value-{k}',{k % 1000})" for k in range(s, min(s + per_statement, count + 1)))
            f.write(f"INSERT INTO bulk_insert VALUES {rows};\n")


def timed(fn):
    t = time.monotonic()
    fn()
    return time.monotonic() - t


def load(server, rows, vrows, csv, results):
    log(f"loading {server.name}")
    for ddl in SCHEMA[server.name]:
        server.psql(ddl)
    secs = timed(lambda: server.psql(f"\\copy kv FROM '{csv}' WITH (FORMAT csv)"))
    results.setdefault("load", {}).setdefault(server.name, {})["kv_copy_rows_per_s"] = rows / secs
    load_wide(server)
    load_index(server)
    # Versioned rows: three versions of each key.
    if server.name == "tabula":
        for version in range(3):
            batch = ",".join(f"({k},'v{version}-{k}')" for k in range(1, vrows + 1))
            server.psql(f"INSERT INTO vt VALUES {batch} ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v")
            time.sleep(0.01)
    else:
        for version in range(3):
            batch = ",".join(f"({k},{version},'v{version}-{k}')" for k in range(1, vrows + 1))
            server.psql(f"INSERT INTO vt VALUES {batch}")
        server.psql("VACUUM ANALYZE")


def bulk_loads(server, csv, inserts, results):
    """Times a COPY and a multi-row INSERT of all rows, each into a table created empty for it."""
    for table in ("bulk_copy", "bulk_insert"):
        server.psql(f"DROP TABLE IF EXISTS {table}")
        server.psql(f"CREATE TABLE {table} (k bigint PRIMARY KEY, v text, n bigint)")
    with PeakMemory(server) as copy_mem:
        copy_s = timed(lambda: server.psql(f"\\copy bulk_copy FROM '{csv}' WITH (FORMAT csv)"))
    t0 = time.monotonic()
    with PeakMemory(server) as insert_mem:
        r = run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(server.port), "-U", server.user, "-d", server.db, "-f", str(inserts)], check=False)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    insert_s = time.monotonic() - t0
    out = results.setdefault("bulk", {}).setdefault(server.name, {})
    for key, value in (("copy_s", copy_s), ("insert_s", insert_s), ("copy_peak_mb", copy_mem.mb), ("insert_peak_mb", insert_mem.mb)):
        out.setdefault(key, []).append(value)
    return copy_s, insert_s


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--vrows", type=int, default=10_000)
    ap.add_argument("--growth-rows", type=int, default=10_000_000, help="0 skips the growth measurement")
    ap.add_argument("--port", type=int, default=55432)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--only", help="run only the workloads whose name contains this (no bulk loads, no growth: "
                    "`--only growth` runs the growth step alone; "
                    "BENCHMARKS.md is left alone, the report goes to bench/results)")
    ap.add_argument("--write-rows", type=int, help=argparse.SUPPRESS)  # the growth step's rows, to stdout
    a = ap.parse_args()
    if a.write_rows:
        sys.stdout.writelines(csv_lines(1, a.write_rows))
        return
    if a.rounds < 5:
        log("fewer than 5 rounds: fine for a try, not for BENCHMARKS.md")

    work = Path(tempfile.mkdtemp(prefix="tabula-bench-"))
    os.chmod(work, 0o777)
    tabula, pg = Tabula(work, a.port), Postgres(work, a.port + 1)
    results = {"machine": machine(), "args": vars(a), "workloads": {}, "started": datetime.datetime.now().isoformat(timespec="seconds")}
    try:
        csv, inserts = work / "kv.csv", work / "inserts.sql"
        write_csv(csv, 1, a.rows)
        write_inserts(inserts, a.rows)
        os.chmod(csv, 0o644)
        tabula.start("sync")
        pg.start()
        load(tabula, a.rows, a.vrows, csv, results)
        load(pg, a.rows, a.vrows, csv, results)
        results["settings"] = {s.name: s.settings() for s in (tabula, pg)}
        variables = {"rows": a.rows, "vrows": a.vrows, "irows": INDEX_ROWS}
        if not a.only or any(a.only in name for name, *_ in PGBENCH):
            for server in (tabula, pg):
                secs = timed(lambda: run([bin_path("pgbench"), "-h", "127.0.0.1", "-p", str(server.port), "-U", server.user, "-i", "-q", "-s", str(PGBENCH_SCALE), server.db]))
                results.setdefault("pgbench_init_s", {})[server.name] = secs
                log(f"pgbench -i -s {PGBENCH_SCALE} on {server.name}: {secs:.1f} s")
        for rnd in range(1, a.rounds + 1):
            log(f"round {rnd} of {a.rounds}")
            # The point select's share of the wire ceiling, both statements in one run (see pgbench_mixed).
            for server in (tabula, pg) if not a.only else ():
                server.start("sync")
                lat = pgbench_mixed(server, [CEILING_SCRIPT, POINT_SCRIPT], "prepared", a.seconds, variables, work)
                results.setdefault("ceiling_share_mixed", {"tabula": [], "postgres": []})[server.name].append(lat[CEILING_SCRIPT] / lat[POINT_SCRIPT])
            if not a.only:
                log(f"  point select / SELECT 1 in one run: tabula {results['ceiling_share_mixed']['tabula'][-1]:.0%}, postgres {results['ceiling_share_mixed']['postgres'][-1]:.0%}")
            for phase in (READS + WRITES, ASYNC_WRITES, PGBENCH):
                for name, script, protocol, clients, durability in phase:
                    if a.only and a.only not in name:
                        continue
                    for server in (tabula, pg):
                        server.start(durability)
                        s = script[server.name] if isinstance(script, dict) else script
                        r = pgbench(server, s, protocol, clients, a.seconds, variables, durability, work)
                        results["workloads"].setdefault(name, {"tabula": [], "postgres": []})[server.name].append(r)
                    t, p = results["workloads"][name]["tabula"][-1], results["workloads"][name]["postgres"][-1]
                    log(f"  {name}: tabula {t['tps']:.0f} tps, postgres {p['tps']:.0f} tps")
        # Bulk loads last, interleaved round by round like the rest: each leaves a million rows behind, and
        # the background work that follows (compaction, autovacuum) must not fall on the other workloads.
        for rnd in range(1, a.rounds + 1) if not a.only else ():
            for server in (tabula, pg):
                server.start("sync")
                copy_s, insert_s = bulk_loads(server, csv, inserts, results)
                log(f"  bulk loads, round {rnd}: {server.name} COPY {copy_s:.2f} s, INSERT {insert_s:.2f} s")
        for rnd in range(1, a.rounds + 1) if not a.only or a.only in BIG_STATEMENTS else ():
            for server in (tabula, pg):
                server.start("sync")
                big_statements(server, csv, a.rows, results)
                b = results["big_statements"][server.name]
                log(f"  {BIG_STATEMENTS}, round {rnd}: {server.name} UPDATE {b['update_s'][-1]:.2f} s, DELETE {b['delete_s'][-1]:.2f} s")
        if not a.only or a.only in IDLE:
            idle_csv = work / "idle.csv"
            write_idle_csv(idle_csv)
            os.chmod(idle_csv, 0o644)
            for server in (tabula, pg):
                server.start("sync")
                idle_cpu(server, idle_csv, results)
                c = results["idle"][server.name]["cores"]
                log(f"  {IDLE}: {server.name} {' '.join(f'{x:.3f}' for x in c)} cores")
            idle_csv.unlink()
        tabula.start("sync")
        if a.growth_rows > a.rows and (not a.only or a.only == "growth"):
            growth(a, tabula, pg, work, variables, results)
    finally:
        for s in (tabula, pg):
            try:
                s.stop()
            except Exception as e:  # keep going: the other server must stop too
                log(f"stopping {s.name}: {e}")
        results["peak_rss_mb"] = {"tabula": tabula.peak_rss_kb / 1024, "postgres": pg.peak_rss_kb / 1024}
        shutil.rmtree(work, ignore_errors=True)
    report(results, Path(a.out), partial=bool(a.only))


def settle(server, limit_s=1200, window_s=5, idle_cores=0.05):
    """Waits until the server's background work after a load is done (compaction of the loaded files,
    autovacuum and checkpoints): its CPU under `idle_cores` over one window, or `limit_s`. Returns the seconds
    waited. Latency measured while one core compacts 100M rows is the compaction's, on either server."""
    hz = os.sysconf("SC_CLK_TCK")
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        before = server.cpu_ticks()
        time.sleep(window_s)
        if (server.cpu_ticks() - before) / hz / window_s < idle_cores:
            break
    return time.monotonic() - start


def growth(a, tabula, pg, work, variables, results):
    """Point-select latency at the suite's table size and at the growth size, from one-client runs that pick
    one of two tables at random statement by statement (see pgbench_mixed): the 1M-row `kv` and a `kv_big` of
    growth-size rows, in the same server, so both percentiles come from the same seconds. p99 over separate
    5 s runs moved by 2x from run to run with the machine alone; here a pause hits both tables alike."""
    log(f"growth: point-select latency at {a.rows} rows against {a.growth_rows}, in the same runs")
    # The rows come from a program, not a file: at 100M rows the file alone would be 3 GB of the disk both
    # servers' tables need.
    rows = f"{sys.executable} {Path(__file__).resolve()} --write-rows {a.growth_rows}"
    out = results["growth"] = {}
    for server in (tabula, pg):
        server.start("sync")
        server.psql("CREATE TABLE kv_big (k bigint PRIMARY KEY, v text, n bigint)")
        with PeakMemory(server):
            load_s = timed(lambda: server.psql(f"\\copy kv_big FROM PROGRAM '{rows}' WITH (FORMAT csv)"))
        settle_s = settle(server)
        log(f"  {server.name}: {a.growth_rows} rows loaded in {load_s:.0f} s, background work done {settle_s:.0f} s later")
        runs = [pgbench_mixed_latencies(server, [POINT_SCRIPT, POINT_BIG_SCRIPT], "prepared", a.seconds, dict(variables, big_rows=a.growth_rows), work)
                for _ in range(3)]
        pct = lambda script, q: median([sorted(r[script])[int(q * (len(r[script]) - 1))] / 1000.0 for r in runs])
        out[server.name] = {
            "small_rows": a.rows, "big_rows": a.growth_rows,
            "p50_small_ms": pct(POINT_SCRIPT, 0.5), "p99_small_ms": pct(POINT_SCRIPT, 0.99),
            "p50_big_ms": pct(POINT_BIG_SCRIPT, 0.5), "p99_big_ms": pct(POINT_BIG_SCRIPT, 0.99),
            "load_s": load_s, "settle_s": settle_s,
        }
        log(f"  {server.name}: {out[server.name]}")


def machine():
    cpus = os.cpu_count()
    mem = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) // 1024 // 1024} GiB"
    except OSError:
        pass
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    pgv = run([bin_path("postgres"), "--version"], check=False).stdout.strip()
    return {"cpus": cpus, "cpu": model, "memory": mem, "kernel": platform.release(), "postgres": pgv}


def report(results, out, partial=False):
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    rows = []
    for name, per in results["workloads"].items():
        t, p = per["tabula"], per["postgres"]
        ratios = [a["tps"] / b["tps"] for a, b in zip(t, p) if a["tps"] and b["tps"]]
        rows.append({
            "workload": name,
            "tabula_tps": median([r["tps"] for r in t]), "postgres_tps": median([r["tps"] for r in p]),
            "tabula_p50_ms": median([r["p50_ms"] for r in t]), "postgres_p50_ms": median([r["p50_ms"] for r in p]),
            "tabula_p99_ms": median([r["p99_ms"] for r in t]), "postgres_p99_ms": median([r["p99_ms"] for r in p]),
            "ratio": median(ratios),
            "tabula_cpu_us": median([r["cpu_us"] for r in t if r.get("cpu_us")]),
            "postgres_cpu_us": median([r["cpu_us"] for r in p if r.get("cpu_us")]),
            "tabula_peak_mb": max((r.get("peak_mb") or 0 for r in t), default=None),
            "postgres_peak_mb": max((r.get("peak_mb") or 0 for r in p), default=None),
        })
    results["summary"] = rows
    w = results["workloads"]
    if CEILING in w and POINT in w:
        results["ceiling_share"] = [p["tps"] / c["tps"] for c, p in zip(w[CEILING]["tabula"], w[POINT]["tabula"]) if c["tps"] and p["tps"]]
    (out / f"{stamp}.json").write_text(json.dumps(results, indent=2))
    md = markdown(results, rows)
    if partial:
        # BENCHMARKS.md's chart is the last full run's: a partial run's goes beside its results.
        (out / f"{stamp}.svg").write_text(svg(rows))
        print(md)
        return
    (ROOT / "bench" / "chart.svg").write_text(svg(rows))
    (out / "latest.md").write_text(md)
    bm = ROOT / "BENCHMARKS.md"
    text = bm.read_text() if bm.exists() else "# Benchmarks\n"
    begin, end = "<!-- suite:begin -->", "<!-- suite:end -->"
    if begin in text and end in text:
        text = text[: text.index(begin)] + begin + "\n" + md + end + text[text.index(end) + len(end):]
    else:
        text += "\n" + begin + "\n" + md + end + "\n"
    bm.write_text(text)
    print(md)


def fmt(x, spec=".0f"):
    return "–" if x is None else format(x, spec)


def settings_line(results):
    """The servers' settings as they reported them (runs before the suite asked have none)."""
    shown = results.get("settings")
    if not shown:
        return []
    each = [f"{server} " + ", ".join(f"`{k}` {v}" for k, v in values.items()) for server, values in (("Tabula", shown.get("tabula", {})), ("PostgreSQL", shown.get("postgres", {})))]
    return ["Settings as the servers report them (`SHOW`): " + "; ".join(each) + "."]


def markdown(results, rows):
    m = results["machine"]
    a = results["args"]
    lines = [
        f"Run {results['started']} on {m['cpus']} vCPUs ({m['cpu']}), {m['memory']}, Linux {m['kernel']}; {m['postgres']}.",
        f"{a['rounds']} interleaved rounds of {a['seconds']} s per workload and server; {a['rows']} rows in `kv`; medians over rounds; the ratio is Tabula/PostgreSQL throughput, computed round by round, median.",
        *settings_line(results),
        "",
        "Peak memory is the largest sample (every 0.5 s) of the server's resident memory while the workload ran, in any round:",
        "Tabula's RSS, and PostgreSQL's postmaster and backends summed by PSS (a shared page counts once).",
        "Server CPU is the server's user and system time per transaction while the workload ran (`/proc`; for PostgreSQL",
        "the postmaster, its backends and the backends that ended), medians over rounds. Tabula's includes its busy polling.",
        "",
        "| workload | Tabula tps | PostgreSQL tps | ratio | Tabula p50 / p99 ms | PostgreSQL p50 / p99 ms | server CPU µs per transaction Tabula / PostgreSQL | peak memory MB Tabula / PostgreSQL |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['workload']} | {fmt(r['tabula_tps'])} | {fmt(r['postgres_tps'])} | {fmt(r['ratio'], '.2f')} | {fmt(r['tabula_p50_ms'], '.3f')} / {fmt(r['tabula_p99_ms'], '.3f')} | {fmt(r['postgres_p50_ms'], '.3f')} / {fmt(r['postgres_p99_ms'], '.3f')} | {fmt(r.get('tabula_cpu_us'))} / {fmt(r.get('postgres_cpu_us'))} | {fmt(r.get('tabula_peak_mb'))} / {fmt(r.get('postgres_peak_mb'))} |")
    share = results.get("ceiling_share")
    if share:
        lines += ["", f"Tabula's prepared point select against its own wire ceiling, round by round (the two run one after the other): {', '.join(f'{100 * x:.0f}' for x in share)} %; median {100 * median(share):.0f} %."]
    mixed = results.get("ceiling_share_mixed")
    if mixed:
        pct = lambda xs: ", ".join(f"{100 * x:.0f}" for x in xs)
        lines += ["", "The same share with both statements in one 1-client pgbench run, picked at random transaction by transaction "
                  "(SELECT 1's mean latency / the point select's), round by round: "
                  f"Tabula {pct(mixed['tabula'])} %, median {100 * median(mixed['tabula']):.0f} %; "
                  f"PostgreSQL (its own point select against its own SELECT 1) {pct(mixed['postgres'])} %, median {100 * median(mixed['postgres']):.0f} %."]
    bulk = results.get("bulk", {})
    if bulk:
        lines += ["", "| bulk load (medians over rounds) | Tabula | PostgreSQL | ratio (PostgreSQL time / Tabula time) | peak memory MB Tabula / PostgreSQL |", "|---|---:|---:|---:|---:|"]
        t, p = bulk.get("tabula", {}), bulk.get("postgres", {})
        for key, label in (("copy", f"COPY of {a['rows']} rows (s)"), ("insert", f"multi-row INSERT of {a['rows']} rows, 1000 per statement (s)")):
            ts, ps = t.get(f"{key}_s", []), p.get(f"{key}_s", [])
            ratio = median([b / x for x, b in zip(ts, ps) if x])
            peak = lambda side: max(side.get(f"{key}_peak_mb", []), default=None)
            lines.append(f"| {label} | {fmt(median(ts), '.2f')} | {fmt(median(ps), '.2f')} | {fmt(ratio, '.2f')} | {fmt(peak(t))} / {fmt(peak(p))} |")
    big = results.get("big_statements", {})
    if big:
        lines += ["", f"| {BIG_STATEMENTS} of {a['rows']} rows (medians over rounds) | Tabula | PostgreSQL | ratio (PostgreSQL time / Tabula time) | peak memory MB Tabula / PostgreSQL |", "|---|---:|---:|---:|---:|"]
        t, p = big.get("tabula", {}), big.get("postgres", {})
        for key, label in (("update", "UPDATE ... SET n = n + 1 (s)"), ("delete", "DELETE (s)")):
            ts, ps = t.get(f"{key}_s", []), p.get(f"{key}_s", [])
            ratio = median([b / x for x, b in zip(ts, ps) if x])
            peak = lambda side: max(side.get(f"{key}_peak_mb", []), default=None)
            lines.append(f"| {label} | {fmt(median(ts), '.2f')} | {fmt(median(ps), '.2f')} | {fmt(ratio, '.2f')} | {fmt(peak(t))} / {fmt(peak(p))} |")
    idle = results.get("idle", {})
    if idle:
        lines += ["", f"| {IDLE} ({IDLE_ROWS} rows of 1 KB under one key, loaded by COPY) | load s | CPU in cores, first {IDLE_WINDOW_S} s after the load | last {IDLE_WINDOW_S} s of {IDLE_WINDOWS * IDLE_WINDOW_S} s | mean of the last minute |", "|---|---:|---:|---:|---:|"]
        last_minute = 60 // IDLE_WINDOW_S
        for name, label in (("tabula", "Tabula"), ("postgres", "PostgreSQL")):
            v = idle.get(name)
            if v:
                c = v["cores"]
                lines.append(f"| {label} | {fmt(v['load_s'], '.1f')} | {fmt(c[0], '.3f')} | {fmt(c[-1], '.3f')} | {fmt(sum(c[-last_minute:]) / len(c[-last_minute:]), '.3f')} |")
    g = results.get("growth")
    if g:
        lines += ["", "| growth: prepared point select | p50 / p99 ms small | p50 / p99 ms big | p99 big/small | load s / background work after it s |", "|---|---:|---:|---:|---:|"]
        for name, v in g.items():
            ratio = v["p99_big_ms"] / v["p99_small_ms"] if v["p99_small_ms"] and v["p99_big_ms"] else None
            lines.append(f"| {name} ({v['small_rows']} → {v['big_rows']} rows) | {fmt(v['p50_small_ms'], '.3f')} / {fmt(v['p99_small_ms'], '.3f')} | {fmt(v['p50_big_ms'], '.3f')} / {fmt(v['p99_big_ms'], '.3f')} | {fmt(ratio, '.2f')} | {fmt(v.get('load_s'), '.0f')} / {fmt(v.get('settle_s'), '.0f')} |")
    rss = results.get("peak_rss_mb", {})
    lines += ["", f"Peak memory over the whole run: Tabula {fmt(rss.get('tabula'))} MB (its peak RSS), PostgreSQL {fmt(rss.get('postgres'))} MB (the largest PSS sample).", "", "![Tabula/PostgreSQL throughput ratio per workload](bench/chart.svg)", ""]
    return "\n".join(lines)


def svg(rows):
    width, bar_h, gap, left = 760, 18, 8, 330
    h = 40 + len(rows) * (bar_h + gap)
    vals = [r["ratio"] or 0 for r in rows]
    top = max(vals + [2.0])
    scale = (width - left - 60) / top
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<text x="{left}" y="16">Tabula / PostgreSQL throughput (1.0 = equal)</text>']
    x1 = left + scale * 1.0
    parts.append(f'<line x1="{x1:.1f}" y1="24" x2="{x1:.1f}" y2="{h - 6}" stroke="#888" stroke-dasharray="4 3"/>')
    for i, r in enumerate(rows):
        y = 30 + i * (bar_h + gap)
        v = r["ratio"] or 0
        color = "#2a7" if v >= 1 else "#c54"
        parts.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{r["workload"]}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{scale * v:.1f}" height="{bar_h}" fill="{color}"/>')
        parts.append(f'<text x="{left + scale * v + 4:.1f}" y="{y + 13}">{v:.2f}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    main()
