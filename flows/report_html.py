"""The HTML report: one self-contained page (inline CSS, inline SVG charts, no script, nothing fetched) from the
rows :func:`assay.flows.report.gather` read.

Every string that comes from the data goes through :func:`_e` (``html.escape``); ids are printed whole and
wrap anywhere, so the page stays readable on a narrow screen without cutting one into an ambiguous prefix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from . import report_svg as svg

VERDICT_COLOURS = {"pass": "#1a7f37", "fail": "#cf222e", "error": "#bf8700", "not judged": "#8c959f"}
MET_RATE_COLOUR = "#0550ae"
COST_COLOURS = {"runner": "#953800", "judge": "#8250df"}
AGREEMENT_COLOURS = {"agree": "#0a7d8c", "disagree": "#bf3989", "undecided": "#8c959f"}

HEADINGS = {
    "summary": "Assay report",
    "verdicts": "Verdicts per consumer",
    "failing": "Failing behaviours",
    "trends": "Trends",
    "costs": "Cost",
    "agreement": "Judge vs vendor agreement",
    "examples": "Examples of the failing behaviours",
}
"""Each section's id and heading, in page order (agreement only when there are evaluator pairs, examples only
when a behaviour failed). The examples come last, as an appendix the failing behaviours' table links to."""

CSS = """
:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; margin: 0; background: #fff; }
main { max-width: 1100px; margin: 0 auto; padding: 16px; }
h1 { font-size: 1.6em; margin: 0 0 8px; }
h2 { font-size: 1.3em; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; margin-top: 32px; }
h3 { font-size: 1.05em; margin: 20px 0 6px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.facts dt { color: #57606a; }
dl.facts dd { margin: 0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.93em; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
code, .id { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: 0.9em;
  overflow-wrap: break-word; }
.nw, td .id { white-space: nowrap; }
details > summary { cursor: pointer; color: #0969da; margin: 6px 0; }
.note { color: #57606a; }
.flag { color: #9a6700; font-weight: 600; }
svg.chart { width: 100%; max-width: 760px; height: auto; display: block; margin: 8px 0; }
.example { border-left: 3px solid #cf222e; padding: 4px 10px; margin: 8px 0; background: #fff8f8; }
.excerpt { margin: 4px 0 0; padding: 0; list-style: none; }
.excerpt li { margin: 2px 0; }
.role { color: #57606a; font-weight: 600; }
@media (max-width: 600px) { main { padding: 8px; } th, td { padding: 3px 5px; } }
"""


@dataclass
class Rendered:
    """The page and what it holds."""

    html: str
    sections: list[str] = field(default_factory=list)
    charts: int = 0


def _e(value: Any) -> str:
    """Any value as escaped HTML text; None reads as a dash."""
    return "—" if value is None else escape(str(value))


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def _list(values: Sequence[Any] | None) -> str:
    return ", ".join(_nw(v) for v in values or [])


def _nw(value: Any) -> str:
    """A value that never breaks inside (a date, a team id): a line breaks between values."""
    return f'<span class="nw">{_e(value)}</span>'


def _evaluators(row: dict[str, Any]) -> str:
    mixed = ' <span class="flag" title="more than one evaluator stands behind these figures">mixed</span>'
    return _list(row.get("evaluators")) + (mixed if row.get("mixed_evaluators") else "")


Column = tuple[str, Callable[[dict[str, Any]], str], bool]
"""A table column: its heading, the cell's HTML from a row (already escaped), and whether it is a number."""


def _table(columns: Sequence[Column], rows: Sequence[dict[str, Any]]) -> str:
    head = "".join(f"<th>{_e(name)}</th>" for name, _, _ in columns)
    body = "".join("<tr>" + "".join(f'<td{" class=n" if number else ""}>{cell(row)}</td>'
                                     for _, cell, number in columns) + "</tr>" for row in rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _col(name: str, key: str, number: bool = False, fmt: Callable[[Any], str] = _e) -> Column:
    return name, lambda row: fmt(row.get(key)), number


def _id(value: Any) -> str:
    return f'<code class="id">{_e(value)}</code>'


def render(data: dict[str, Any]) -> Rendered:
    """The page for ``data`` (:func:`assay.flows.report.gather`)."""
    out = Rendered("")
    parts = [_summary(data)]
    out.sections.append("summary")
    if data["coverage"]["runs"]:
        builders = [("verdicts", _verdicts), ("failing", _failing), ("trends", _trends), ("costs", _costs)]
        if data["agreement"]:
            builders.append(("agreement", _agreement))
        if data["failing"]:
            builders.append(("examples", _examples))
        for section, build in builders:
            body, charts = build(data)
            parts.append(f'<section id="{section}"><h2>{HEADINGS[section]}</h2>{body}</section>')
            out.sections.append(section)
            out.charts += charts
    title = f"Assay report: {data['describe']}, {data['period']}"
    out.html = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                f"<title>{_e(title)}</title><style>{CSS}</style></head>"
                f"<body><main>{''.join(parts)}</main></body></html>\n")
    return out


def _summary(data: dict[str, Any]) -> str:
    c = data["coverage"]
    facts = [
        ("Scope", _e(data["describe"])),
        ("Period", _e(data["period"]) + (f" (run dates {_e(c['first_date'])} to {_e(c['last_date'])})"
                                         if c["runs"] else "")),
        ("Generated", _e(data["generated_at"])),
        ("Data", f"{c['runs']} finalised run(s), {c['case_runs']} case run(s) ({c['not_executed']} did not execute), "
                 f"{c['teams']} team(s), {c['suites']} suite(s)"),
    ]
    if c["runs"]:
        facts += [("Runners", _list(c["runners"])), ("Projected", _e(f"{c['projected_at']:%Y-%m-%d %H:%M:%S} UTC"))]
    body = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    empty = "" if c["runs"] else (
        '<p class="flag">No finalised run in this scope and period: there is nothing to report. Widen the period '
        "(--since, --until) or the scope (--team, --suite), or run a suite first (assay run TEAM/SUITE).</p>")
    return f'<header id="summary"><h1>{HEADINGS["summary"]}</h1><dl class="facts">{body}</dl>{empty}</header>'


def _verdicts(data: dict[str, Any]) -> tuple[str, int]:
    rows = data["verdicts"]
    bars = []
    for r in rows:
        bars.append((f"{r['consumer_key']} now", [("pass", r["pass"]), ("fail", r["fail"]), ("error", r["error"]),
                                                  ("not judged", r["not_judged"])]))
        bars.append((f"{r['consumer_key']} stamped", [("pass", r["stamped_pass"]), ("fail", r["stamped_fail"]),
                                                      ("error", r["stamped_error"])]))
    parts = ['<p class="note">Each consumer\'s verdict on every finalised run: <b>now</b>, under its current criteria '
             "over the current results, and <b>stamped</b> when the run was finalised.</p>",
             svg.stacked_bars("Verdicts per consumer, now and stamped (runs)", bars, VERDICT_COLOURS, " runs"),
             _table([_col("consumer", "consumer_key"), _col("runs", "runs", True), _col("pass", "pass", True),
                     _col("fail", "fail", True), _col("error", "error", True), _col("not judged", "not_judged", True),
                     _col("stamped pass", "stamped_pass", True), _col("stamped fail", "stamped_fail", True),
                     _col("stamped error", "stamped_error", True), ("evaluators", lambda r: (
                         '<span class="flag">mixed</span>' if r["mixed_evaluators"] else "one per verdict"), False)],
                    rows)]
    charts = 1
    dates = sorted({r["date"] for r in data["verdicts_by_date"]})
    if len(dates) > 1:
        series = {}
        for consumer in sorted({r["consumer_key"] for r in data["verdicts_by_date"]}):
            by_date = {r["date"]: r for r in data["verdicts_by_date"] if r["consumer_key"] == consumer}
            series[consumer] = [by_date[d]["pass"] / by_date[d]["runs"] if d in by_date and by_date[d]["runs"] else None
                                for d in dates]
        parts.append("<h3>Pass rate over time</h3>" + svg.lines("Share of runs passing, per consumer and day", dates,
                                                                 series, percent=True))
        charts += 1
    else:
        parts.append(f'<p class="note">Every run is from one day ({_e(dates[0] if dates else None)}): no chart over '
                     "time.</p>")
    return "".join(parts), charts


def _failing(data: dict[str, Any]) -> tuple[str, int]:
    rows = data["failing"]
    if not rows:
        return ('<p class="note">No behaviour failed in this scope and period.</p>'
                + _not_applicable(data.get("not_applicable") or [])), 0
    parts = ['<p class="note">Behaviours with at least one failure (a result not met), the most widespread first. '
             "The met rate leaves undetermined results out.</p>",
             _table([("behaviour", lambda r: _id(r["assertion_key"]), False),
                     ("examples", lambda r: f'<a href="#example-{_e(r["assertion_key"])}">'
                                            f'{len(r["examples"])} below</a>', False),
                     _col("teams failing", "teams_failing", True),
                     ("teams", lambda r: _list(r["failing_teams"]), False), _col("failures", "failures", True),
                     _col("results", "results", True), _col("met rate", "met_rate", True, _rate),
                     ("evaluators", _evaluators, False)], rows)]
    if data["failing_more"]:
        parts.append(f'<p class="note">{data["failing_more"]} more failing behaviour(s) not shown.</p>')
    parts.append(_not_applicable(data.get("not_applicable") or []))
    return "".join(parts), 0


def _not_applicable(rows: list[dict[str, Any]]) -> str:
    """The behaviours a runner could not evaluate where they ran: not failures of the agent, so listed apart."""
    if not rows:
        return ""
    return ('<h3 id="not-applicable">Not applicable where they ran</h3><p class="note">Results a runner could not '
            "evaluate (unsupported there): left out of the failing behaviours above. A consumer counts such a key "
            "only where it applies with <code>applies: {KEY: capable}</code>.</p>"
            + _table([("behaviour", lambda r: _id(r["assertion_key"]), False), ("runner", lambda r: _id(r["runner"]), False),
                      _col("results", "results", True), _col("runs", "runs", True)], rows))


def _examples(data: dict[str, Any]) -> tuple[str, int]:
    parts = ['<p class="note">For each failing behaviour, failed case runs of different cases where there are, the '
             "latest first: the result's reason and the start of the transcript.</p>"]
    for row in data["failing"]:
        parts.append(f'<h3 id="example-{_e(row["assertion_key"])}">{_id(row["assertion_key"])}: '
                     f'{row["failures"]} failure(s)</h3>')
        parts += [_example(e) for e in row["examples"]]
    return "".join(parts), 0


def _example(e: dict[str, Any]) -> str:
    call = f" (call {_id(e['source_ref'])})" if e.get("source_ref") else ""
    head = (f"<div>case {_id(e['case_key'])}{call}, run {_id(e['run_id'])}, case run {_id(e['case_run_id'])}</div>"
            f"<div>{_e(e['evaluator'])}: {_e(e['reason'])}</div>")
    if e.get("status") not in (None, "executed"):
        return f'<div class="example">{head}<div class="note">did not execute: {_e(e.get("error"))}</div></div>'
    if not e["excerpt"]:
        return (f'<div class="example">{head}<div class="note">no transcript: the {_e(e.get("runner"))} runner '
                "recorded none</div></div>")
    turns = "".join(f'<li><span class="role">{_e(t["role"])}:</span> {_e(t["text"])}</li>' for t in e["excerpt"])
    rest = e["turns"] - len(e["excerpt"])
    more = f'<li class="note">… {rest} more turn(s)</li>' if rest > 0 else ""
    return f'<div class="example">{head}<ul class="excerpt">{turns}{more}</ul></div>'


def _trends(data: dict[str, Any]) -> tuple[str, int]:
    trend = data["trend"]
    totals: dict[tuple[str, int], list[int]] = {}
    for r in trend:
        met, not_met = totals.setdefault((r["assertion_key"], r["assertion_version"]), [0, 0])
        totals[(r["assertion_key"], r["assertion_version"])] = [met + r["met"], not_met + r["not_met"]]
    bars = [(f"{key} v{version}", met / (met + not_met) if met + not_met else None)
            for (key, version), (met, not_met) in sorted(totals.items())]
    parts = ['<p class="note">Each behaviour\'s met rate by assertion version over the period (a rewording starts a '
             "new version; the key keeps the history).</p>",
             svg.rate_bars("Met rate per behaviour and assertion version", bars, MET_RATE_COLOUR)]
    charts = 1
    weeks = sorted({r["week"] for r in trend})
    if len(weeks) > 1:
        keys = [r["assertion_key"] for r in data["failing"][:6]]
        series = {}
        for key in keys:
            by_week: dict[str, list[int]] = {}
            for r in trend:
                if r["assertion_key"] == key:
                    met, not_met = by_week.get(r["week"], [0, 0])
                    by_week[r["week"]] = [met + r["met"], not_met + r["not_met"]]
            series[key] = [(by_week[w][0] / sum(by_week[w])) if w in by_week and sum(by_week[w]) else None
                           for w in weeks]
        parts.append("<h3>Met rate per week (the failing behaviours)</h3>"
                     + svg.lines("Met rate per week of the failing behaviours", weeks, series, percent=True))
        charts += 1
    else:
        parts.append(f'<p class="note">Every run is from one week (of {_e(weeks[0] if weeks else None)}): '
                     "no chart per week.</p>")
    key = ("behaviour", lambda r: _id(r["assertion_key"]), False)
    parts.append(_folded("Every behaviour by version and week", _table(
        [key, _col("version", "assertion_version", True), _col("week", "week", fmt=_nw), _col("teams", "teams", True),
         _col("runs", "runs", True), _col("results", "results", True), _col("not met", "not_met", True),
         _col("undetermined", "undetermined", True), _col("met rate", "met_rate", True, _rate),
         ("evaluators", _evaluators, False)], trend), len(trend)))
    if data["weekly"]:
        parts.append(_folded("Failures by team and week", _table(
            [key, _col("team", "team_id", fmt=_nw), _col("week", "week", fmt=_nw), _col("runs", "runs", True),
             _col("results", "results", True), _col("not met", "not_met", True),
             _col("met rate", "met_rate", True, _rate), ("versions", lambda r: _list(r["versions"]), False),
             ("evaluators", _evaluators, False)], data["weekly"]),
            len(data["weekly"])))
    return "".join(parts), charts


def _folded(title: str, table: str, rows: int) -> str:
    """A long table behind its title (a click opens it; no script)."""
    return f"<details><summary>{_e(title)}: {rows} row(s)</summary>{table}</details>"


def _costs(data: dict[str, Any]) -> tuple[str, int]:
    runner = data["runner_costs"]
    totals: dict[str, list[float]] = {}
    for r in runner:
        label = f"{r['team_id']} · {r['runner']}"
        spent = totals.setdefault(label, [0.0, 0.0])
        spent[0] += r["runner_cost_usd"] or 0
        spent[1] += r["judge_cost_usd"] or 0
    bars = [(label, [("runner", a), ("judge", b)]) for label, (a, b) in sorted(totals.items()) if a or b]
    unpriced = [label for label, (a, b) in sorted(totals.items()) if not (a or b)]
    parts = ['<p class="note">What the runners reported spending and what our judge spent, per team and runner; '
             "n/a: no cost reported (no runner cost, or no judge price configured).</p>"]
    charts = 0
    if bars:
        parts.append(svg.stacked_bars("Cost per team and runner (USD)", bars, COST_COLOURS, " USD"))
        charts = 1
        if unpriced:
            parts.append(f'<p class="note">Not charted, no cost reported: {_list(unpriced)}.</p>')
    else:
        parts.append('<p class="note">No runner reported a cost and no judge price is configured: '
                     "nothing to chart.</p>")
    money = [_col("runner cost", "runner_cost_usd", True, _usd), _col("judge cost", "judge_cost_usd", True, _usd),
             _col("total", "total_cost_usd", True, _usd)]
    parts.append("<h3>Per team, week and runner</h3>" + _table(
        [_col("team", "team_id", fmt=_nw), _col("week", "week", fmt=_nw), _col("runner", "runner"),
         _col("runs", "runs", True), _col("case runs", "case_runs", True), *money], runner))
    parts.append("<h3>Per consumer</h3><p class=\"note\">The full cost of every run the consumer reads: runs serve "
                 "every consumer at once, so these figures overlap and do not add up to the total.</p>" + _table(
                     [_col("consumer", "consumer_key"), _col("runs", "runs", True),
                      _col("case runs", "case_runs", True), *money], data["consumer_costs"]))
    return "".join(parts), charts


def _agreement(data: dict[str, Any]) -> tuple[str, int]:
    rows = data["agreement"]
    bars = [(f"{r['behaviour']} · {r['team_id']}",
             [("agree", r["agree"]), ("disagree", r["disagree"]), ("undecided", r["pairs"] - r["decided"])])
            for r in rows]
    parts = ['<p class="note">Our evaluation of a behaviour against a vendor\'s evaluation of the same behaviour on '
             "the same case runs; undecided: either could not decide.</p>",
             svg.stacked_bars("Judge vs vendor agreement (case runs)", bars, AGREEMENT_COLOURS, " pairs"),
             _table([("ours", lambda r: f"{_id(r['behaviour'])}<br>{_e(r['our_evaluator'])}", False),
                     ("vendor's", lambda r: f"{_id(r['vendor_key'])}<br>{_e(r['vendor_evaluator'])}", False),
                     _col("team", "team_id", fmt=_nw), _col("pairs", "pairs", True), _col("agree", "agree", True),
                     _col("disagree", "disagree", True), _col("agreement", "agreement_rate", True, _rate),
                     _col("only ours met", "we_pass_vendor_fails", True),
                     _col("only vendor's met", "we_fail_vendor_passes", True)], rows)]
    if data["disagreements"]:
        def said(met: bool | None, reason: str | None) -> str:
            verdict = "undetermined" if met is None else "met" if met else "not met"
            return f"{verdict}: {_e(reason)}" if reason else verdict
        parts.append("<h3>Where they disagree</h3>" + _table(
            [("behaviour", lambda r: _id(r["behaviour"]), False), ("case", lambda r: _id(r["case_key"]), False),
             ("call", lambda r: _id(r["source_ref"]) if r["source_ref"] else "—", False),
             ("case run", lambda r: _id(r["case_run_id"]), False),
             ("ours", lambda r: said(r["our_met"], r["our_reason"]), False),
             ("vendor's", lambda r: said(r["vendor_met"], r["vendor_reason"]), False)], data["disagreements"]))
    return "".join(parts), 1
