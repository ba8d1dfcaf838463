#!/usr/bin/env python3
"""Puts the engine micro-benchmark table (the output of `cargo bench --bench engine`) into BENCHMARKS.md."""
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
lines = Path(sys.argv[1]).read_text().splitlines()
table = [l for l in lines if l.startswith("durability")] + [""] + [l for l in lines if l.startswith("|")]
bm = root / "BENCHMARKS.md"
text = bm.read_text() if bm.exists() else "# Benchmarks\n"
begin, end = "<!-- engine:begin -->", "<!-- engine:end -->"
body = begin + "\n" + "\n".join(table) + "\n" + end
if begin in text and end in text:
    text = text[: text.index(begin)] + body + text[text.index(end) + len(end):]
else:
    text += "\n" + body + "\n"
bm.write_text(text)
