#!/usr/bin/env python3
"""Two Tabula builds side by side: the suite's workloads (run.py's), interleaved round by round.

For a change that must cost nothing: build the commit before it and the change in release, keep each
`tabula` binary, then

    python3 bench/compare.py BEFORE_BIN AFTER_BIN [--rounds 5] [--seconds 5] [--rows 1000000]

Both servers load the same data, then pgbench runs each workload against one, then the other, round by
round (which one goes first alternates), so that the machine's drift falls on both. Prints a Markdown table:
medians of throughput, and the ratio after/before computed round by round, with its range.
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import shutil
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as suite  # noqa: E402


class Build(suite.Tabula):
    """A Tabula server from a given binary; `name` stays "tabula" for the suite's schema and scripts."""

    def __init__(self, workdir, port, binary, label):
        super().__init__(workdir / label, port)
        self.binary = binary
        self.label = label

    def start(self, durability=None):
        if self.proc:
            return
        self.dir.parent.mkdir(parents=True, exist_ok=True)
        args = [self.binary, "--data-dir", str(self.dir), "--listen", f"127.0.0.1:{self.port}", "--log-level", "warn", "--max-connections", "200", "--block-cache-mb", "1024"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.wait_ready()

    def stop(self):
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)
            self.proc = None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--vrows", type=int, default=10_000)
    ap.add_argument("--port", type=int, default=55442)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tabula-compare-"))
    builds = [Build(work, a.port, a.before, "before"), Build(work, a.port + 1, a.after, "after")]
    tps = {}
    try:
        csv = work / "kv.csv"
        suite.write_csv(csv, 1, a.rows)
        results = {}
        for b in builds:
            b.start("sync")
            suite.load(b, a.rows, a.vrows, csv, results)
        variables = {"rows": a.rows, "vrows": a.vrows}
        for rnd in range(a.rounds):
            suite.log(f"round {rnd + 1} of {a.rounds}")
            order = builds if rnd % 2 == 0 else builds[::-1]
            for name, script, protocol, clients, durability in suite.READS + suite.WRITES + suite.ASYNC_WRITES:
                s = script["tabula"] if isinstance(script, dict) else script
                for b in order:
                    r = suite.pgbench(b, s, protocol, clients, a.seconds, variables, durability, work)
                    tps.setdefault(name, {"before": [], "after": []})[b.label].append(r["tps"])
                suite.log(f"  {name}: before {tps[name]['before'][-1]:.0f}, after {tps[name]['after'][-1]:.0f} tps")
    finally:
        for b in builds:
            try:
                b.stop()
            except Exception as e:  # the other server must stop too
                suite.log(f"stopping {b.label}: {e}")
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{a.rounds} interleaved rounds of {a.seconds} s per workload and build; {a.rows} rows in `kv`.\n")
    print("| workload | before, tps (median) | after, tps (median) | after/before (median of rounds) | after/before, min–max |")
    print("|---|---:|---:|---:|---|")
    for name, t in tps.items():
        ratios = [x / y for x, y in zip(t["after"], t["before"]) if y]
        print(f"| {name} | {statistics.median(t['before']):.0f} | {statistics.median(t['after']):.0f} | {statistics.median(ratios):.2f} | {min(ratios):.2f}–{max(ratios):.2f} |")


if __name__ == "__main__":
    os.umask(0o022)
    main()
