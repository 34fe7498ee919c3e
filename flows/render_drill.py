"""How the drill-down shows things to a person: case runs with the results that decided them, one case run
in full (``assay show``) and what changed between two runs (``assay diff``).

Every id is printed whole and long lines wrap (never an id cut short); text that came from evidence is
printed as plain text, never read as markup.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .durations import human_ms

_COLOURS = {"pass": "green", "fail": "red", "error": "yellow"}
_LINE = {"turns": "turn", "calls": "tool call"}


def _verdict(v: str | None) -> Text:
    return Text(v or "-", style=_COLOURS.get(v or "", "dim"))


def _met(met: bool | None) -> Text:
    if met is None:
        return Text("undetermined", style="yellow")
    return Text("met", style="green") if met else Text("not met", style="red")


def _value(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _line(console: Console, indent: int, *parts: str | Text | tuple[str, str]) -> None:
    """One line of text ``indent`` columns in, its wrapped continuation lines as far in."""
    grid = Table.grid()
    grid.add_column(width=indent, no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("", Text.assemble(*parts))
    console.print(grid)


def _result_lines(console: Console, results: list[dict[str, Any]], indent: int) -> None:
    for res in results:
        _line(console, indent, (res["assertion_key"], "bold"), "  ", _met(res["met"]),
              f"  value {_value(res['value'])}  ", res.get("evaluator") or "no evaluator")
        if res.get("reason"):
            _line(console, indent + 2, res["reason"])


def _case_label(c: dict[str, Any]) -> str:
    return f"{c['case_key']} (call {c['call_id']})" if c.get("call_id") else f"{c['case_key']} (case run {c['case_run_id']})"


def print_cases(console: Console, run_id: str, consumer: str, cases: list[dict[str, Any]]) -> None:
    """One run's case runs for one consumer: a line each; under a fail or an error, the results that decided it."""
    console.print(Text.assemble((f"{consumer}", "bold"), f" by case, run {run_id}: {len(cases)} case run(s)"))
    for c in cases:
        _line(console, 2, _case_label(c), ": ", _verdict(c["verdict"]), " ", c["reason"] or "")
        _result_lines(console, c.get("results", []), 4)


def print_show(console: Console, s: dict[str, Any]) -> None:
    c = s["case_run"]
    console.print(Text.assemble(("case run ", "bold"), (c["case_run_id"], "bold")))
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="dim", no_wrap=True)
    facts.add_column(overflow="fold")
    for label, value in (("run", c["run_id"]), ("suite", c["suite"]), ("case", c["case_key"]),
                         ("call", c["call_id"] or "-"), ("runner", c["runner"]), ("status", c["status"]),
                         ("error", c["error"]), ("duration", None if c["duration_ms"] is None else human_ms(c["duration_ms"])),
                         ("cost", None if c["cost_usd"] is None else f"{c['cost_usd']:g} USD")):
        if value is not None:
            facts.add_row(label, Text(str(value)))
    console.print(facts)
    if s["verdicts"]:
        console.print(Text("verdicts (under the run's stamped criteria)", style="bold"))
        for v in s["verdicts"]:
            _line(console, 2, v["consumer"], ": ", _verdict(v["verdict"]), " ", v["reason"] or "")
    console.print(Text("results (current outcome)", style="bold"))
    for res in s["results"]:
        _result_lines(console, [res], 2)
        counted = ", ".join(res["counted_by"]) or "no consumer (advisory)"
        where = "; ".join(f"{_LINE[what]}{'s' if len(idx) > 1 else ''} {', '.join(map(str, idx))}"
                          for what, idx in (res["decided_by"] or {}).items())
        _line(console, 4, (f"counted by: {counted}" + (f"; decided by {where}" if where else ""), "dim"))
    if not s["results"]:
        console.print("  none: the case run has not been judged")
    _print_lines(console, "transcript", s["transcript"], lambda t: (t["role"], t["text"] or ""))
    _print_lines(console, "tool calls", s["tool_calls"], lambda c: (
        c["name"], f"{c['arguments'] or ''} -> {c['result'] if c['result'] is not None else 'no result'}"
        + (" (error)" if c["is_error"] else "")))


def _print_lines(console: Console, title: str, lines: list[dict[str, Any]], cells) -> None:
    console.print(Text(f"{title} ({len(lines)}; > marks a line that decided a result)", style="bold"))
    if not lines:
        console.print("  none recorded")
        return
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for line in lines:
        who, text = cells(line)
        body = Text(text)
        if line["decides"]:
            body.append(f"\n^ decides {', '.join(line['decides'])}", style="bold cyan")
        grid.add_row(">" if line["decides"] else " ", str(line["index"]), who, body)
    console.print(grid)


def print_diff(console: Console, d: dict[str, Any]) -> None:
    console.print(Text.assemble(("diff ", "bold"), (d["suite"], "bold")))
    console.print(Text(f"  a: run {d['run_a']}\n  b: run {d['run_b']}"))
    console.print(Text("by consumer (a -> b)", style="bold"))
    for c in d["consumers"]:
        mark = "changed" if c["changed"] else "same"
        _line(console, 2, c["consumer"], ": ", _verdict(c["a"]), " -> ", _verdict(c["b"]), f"  {mark}")
    changed = [c for c in d["cases"] if c["changed"]]
    console.print(Text(f"by case (a -> b): {len(changed)} changed, {len(d['cases']) - len(changed)} unchanged",
                       style="bold"))
    for c in changed:
        label = c["case_key"] + (f" (call {c['source_ref']})" if c["source_ref"] else "")
        _line(console, 2, label, " ", c["consumer"], ": ", _verdict(c["a"]), " -> ", _verdict(c["b"]))
    console.print(Text("by assertion key (met rate a -> b)", style="bold"))
    for k in d["keys"]:
        a, b = k["a"], k["b"]
        _line(console, 2, f"{k['assertion_key']}: {_rate(a)} -> {_rate(b)}"
              + (f", {len(k['changed'])} result(s) changed" if k["changed"] else ""))
        for ch in k["changed"]:
            label = ch["case_key"] + (f" (call {ch['source_ref']})" if ch["source_ref"] else "")
            _line(console, 4, label, ": ", _met(ch["met_a"]), " -> ", _met(ch["met_b"]))
            if ch["reason_b"]:
                _line(console, 6, f"now: {ch['reason_b']}")


def _rate(side: dict[str, Any]) -> str:
    if not side["results"]:
        return "no results"
    apart = [f"{side[k]} {label}" for k, label in (("nulls", "undetermined"), ("not_applicable", "not applicable"))
             if side.get(k)]
    return f"{side['met']}/{side['results']} met" + (f" ({', '.join(apart)})" if apart else "")


_SERIES_STYLE = {"pass": "green", "fail": "red", "flaky": "yellow", "error": "magenta"}


def print_series(console: Console, run_id: str, consumer: str, series: list[dict[str, Any]]) -> None:
    """A consumer's per-case decisions over a run's replays: FLAKY cases with their pass rate and bounds."""
    table = Table(title=f"{consumer} on run {run_id}: each case over its replays", title_justify="left")
    for name in ("case", "verdict", "passed", "rate", "Wilson bounds", "decided by"):
        table.add_column(name, overflow="fold")
    for s in series:
        rate = f"{s['passes'] / s['runs']:.2f}" if s["runs"] else "-"
        bounds = f"{s['lower']:.2f}-{s['upper']:.2f}" if s["lower"] is not None and s["upper"] is not None else "-"
        how = {"sequential": f"sequential test at replay {s['at']}", "wilson": "Wilson bound",
               "undecided": "nothing: undecided", "no-replays": "no replay judged"}.get(s["how"], s["how"])
        errors = f" (+{s['errors']} error)" if s["errors"] else ""
        table.add_row(s["case_key"], Text(s["verdict"].upper(), style=_SERIES_STYLE.get(s["verdict"], "")),
                      f"{s['passes']}/{s['runs']}{errors}", rate, bounds, how)
    console.print(table)
