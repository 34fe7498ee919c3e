"""Run every benchmark, print a table, write bench/results.json."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from . import (
    cli, collect, exam_redaction, exam_stats, faults, fleet, flows, ingest, judge, judging, lake, lake_100m, leases,
    rejudge_memory, scale, secrets, voice_metrics, voice_stats,
)
from .common import Result, byte_compile_package, machine

BENCHMARKS = [ingest, leases, collect, judging, judge, faults, secrets, lake, lake_100m, cli, flows, scale, rejudge_memory, fleet,
              voice_stats, voice_metrics, exam_stats, exam_redaction]


def main(argv: list[str] | None = None) -> int:
    """Run every benchmark, or only those named (``python -m bench judge collect``): then the other
    entries of ``results.json`` are kept as they were, and each keeps the time it was measured."""
    names = argv if argv is not None else sys.argv[1:]
    known = {b.__name__.split(".")[-1]: b for b in BENCHMARKS}
    unknown = sorted(set(names) - set(known))
    if unknown:
        print(f"unknown benchmark(s) {unknown}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    byte_compile_package()
    now = datetime.now(UTC).isoformat(timespec="seconds")
    results: list[Result] = []
    for name, bench in known.items():
        if names and name not in names:
            continue
        print(f"running {name} ...", flush=True)
        results.extend(bench.run())
    out = Path(__file__).parent / "results.json"
    fresh = [{**r.to_dict(), "measured_at": now} for r in results]
    kept = []
    if names and out.exists():
        previous = json.loads(out.read_text())
        measured = {r["name"] for r in fresh}
        kept = [{"measured_at": previous.get("generated_at"), **r} for r in previous["results"] if r["name"] not in measured]
    doc = {
        "schema": "assay.bench", "revision": 2, "stability": "experimental",
        "machine": machine(), "generated_at": now, "results": kept + fresh,
    }
    out.write_text(json.dumps(doc, indent=2) + "\n")

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"benchmarks on {doc['machine']}", title_justify="left")
    for col in ("name", "value", "unit", "baseline", "ratio", "target", "met"):
        table.add_column(col)
    for r in results:
        table.add_row(r.name, f"{r.value:,}", r.unit, "" if r.baseline is None else f"{r.baseline:,}",
                      "" if r.ratio is None else f"{r.ratio}x", r.target, "[green]yes[/]" if r.met else "[red]NO[/]")
    Console().print(table)
    print(f"wrote {out}")
    return 0 if all(r.met for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
