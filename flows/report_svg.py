"""Charts for the HTML report as inline SVG: horizontal bars (stacked or not) and lines over periods.

Hand-written SVG, so the report needs nothing to draw it (no script, no network, no charting engine). Each
chart scales to its container (a ``viewBox``, no fixed width), names itself for screen readers, carries a
legend, and escapes every label it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH = 640
"""The charts' coordinate width; the page scales them to its own."""
LABEL = 200
"""Room on the left for the bars' labels."""
ROW = 26
"""Height of one bar row."""
FONT = 'font-family="system-ui, sans-serif" font-size="12"'

Segment = tuple[str, float]
"""One part of a bar: its series name and its value."""


def _svg(title: str, height: int, body: list[str]) -> str:
    return (f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {WIDTH} {height}" '
            f'preserveAspectRatio="xMinYMin meet" {FONT}>'
            f'<title>{escape(title)}</title>{"".join(body)}</svg>')


def _label(text: str, limit: int = 30) -> str:
    """A bar's label, shortened to fit its room; the full text stays in the bar's tooltip."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _legend(y: int, colours: dict[str, str]) -> list[str]:
    out, x = [], LABEL
    for name, colour in colours.items():
        out.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{colour}"/>'
                   f'<text x="{x + 16}" y="{y + 10}">{escape(name)}</text>')
        x += 28 + 7 * len(name)
    return out


def stacked_bars(title: str, rows: Sequence[tuple[str, Sequence[Segment]]], colours: dict[str, str],
                 unit: str = "") -> str:
    """One horizontal bar per row, its segments stacked in the order of ``colours``; each bar's total at its end."""
    top = max((sum(v for _, v in segments) for _, segments in rows), default=0) or 1
    span = WIDTH - LABEL - 70
    body = _legend(4, colours)
    for i, (label, segments) in enumerate(rows):
        y = 26 + i * ROW
        body.append(f'<text x="{LABEL - 6}" y="{y + 14}" text-anchor="end">{escape(_label(label))}'
                    f'<title>{escape(label)}</title></text>')
        x = float(LABEL)
        values = dict(segments)
        for name, colour in colours.items():
            value = values.get(name, 0) or 0
            if value <= 0:
                continue
            width = value / top * span
            body.append(f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="{ROW - 8}" fill="{colour}">'
                        f'<title>{escape(label)}: {escape(name)} {_number(value)}{escape(unit)}</title></rect>')
            x += width
        total = sum(v or 0 for _, v in segments)
        body.append(f'<text x="{x + 4:.1f}" y="{y + 14}">{_number(total)}{escape(unit)}</text>')
    return _svg(title, 30 + len(rows) * ROW, body)


def rate_bars(title: str, rows: Sequence[tuple[str, float | None]], colour: str) -> str:
    """One horizontal bar per row for a rate in 0..1 (a met rate), on a fixed 0-100 % axis; none: "n/a"."""
    span = WIDTH - LABEL - 60
    body = [f'<line x1="{LABEL + span * q}" y1="6" x2="{LABEL + span * q}" y2="{14 + len(rows) * ROW}" '
            f'stroke="#d0d7de"/><text x="{LABEL + span * q}" y="{28 + len(rows) * ROW}" text-anchor="middle">'
            f'{int(q * 100)} %</text>' for q in (0, 0.5, 1)]
    for i, (label, rate) in enumerate(rows):
        y = 8 + i * ROW
        body.append(f'<text x="{LABEL - 6}" y="{y + 14}" text-anchor="end">{escape(_label(label))}'
                    f'<title>{escape(label)}</title></text>')
        if rate is None:
            body.append(f'<text x="{LABEL + 4}" y="{y + 14}" fill="#57606a">n/a: nothing decided</text>')
            continue
        body.append(f'<rect x="{LABEL}" y="{y}" width="{max(rate * span, 1):.1f}" height="{ROW - 8}" fill="{colour}">'
                    f'<title>{escape(label)}: {rate:.0%}</title></rect>'
                    f'<text x="{LABEL + rate * span + 4:.1f}" y="{y + 14}">{rate:.0%}</text>')
    return _svg(title, 36 + len(rows) * ROW, body)


PALETTE = ("#0550ae", "#bc4c00", "#1a7f37", "#8250df", "#bf3989", "#116329", "#953800", "#57606a")
"""Line colours, in series order."""


def lines(title: str, periods: Sequence[str], series: dict[str, Sequence[float | None]], *,
          percent: bool = False) -> str:
    """One line per series over ``periods`` (dates or weeks, in order); a missing point breaks its line."""
    top = 1.0 if percent else max((v for values in series.values() for v in values if v is not None), default=0) or 1
    left, right, high = 56, WIDTH - 16, 180
    step = (right - left) / max(len(periods) - 1, 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        return left + i * step, 20 + high - v / top * high

    body = []
    for q in (0, 0.5, 1):
        y = 20 + high - q * high
        tick = f"{q:.0%}" if percent else _number(q * top)
        body.append(f'<line x1="{left}" y1="{y}" x2="{right}" y2="{y}" stroke="#d0d7de"/>'
                    f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{tick}</text>')
    every = max(1, len(periods) // 6)
    for i, period in enumerate(periods):
        if i % every == 0 or i == len(periods) - 1:
            body.append(f'<text x="{left + i * step:.1f}" y="{high + 38}" text-anchor="middle">{escape(period)}</text>')
    colours = {}
    for n, (name, values) in enumerate(series.items()):
        colour = colours[name] = PALETTE[n % len(PALETTE)]
        runs: list[list[str]] = [[]]
        for i, v in enumerate(values):
            if v is None:
                runs.append([])
                continue
            x, y = xy(i, v)
            runs[-1].append(f"{x:.1f},{y:.1f}")
            shown = f"{v:.0%}" if percent else _number(v)
            body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}">'
                        f'<title>{escape(name)} {escape(periods[i])}: {shown}</title></circle>')
        body += [f'<polyline points="{" ".join(run)}" fill="none" stroke="{colour}" stroke-width="2"/>'
                 for run in runs if len(run) > 1]
    legend_y = high + 50
    rows = [list(colours.items())[i:i + 3] for i in range(0, len(colours), 3)]
    for r, chunk in enumerate(rows):
        x = left
        for name, colour in chunk:
            body.append(f'<rect x="{x}" y="{legend_y + r * 18}" width="12" height="12" fill="{colour}"/>'
                        f'<text x="{x + 16}" y="{legend_y + r * 18 + 10}">{escape(_label(name, 26))}'
                        f'<title>{escape(name)}</title></text>')
            x += 190
    return _svg(title, legend_y + 18 * len(rows) + 6, body)


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
