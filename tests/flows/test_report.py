"""``assay report --html``: one self-contained page over the demo data, written by the real command line,
rendered by headless Chromium (offline) and looked at: the charts and tables show, in section order.

The screenshot is kept as a test artefact in ``$ASSAY_TEST_ARTIFACTS`` (default ``tests/artifacts/``, ignored
by git): ``report.png``, beside the page itself, ``report.html``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from PIL import Image
from readme_blocks import assert_walked, checkout
from command_line import assay

from assay.core.document_models import validate
from assay.core.settings import Settings
from assay.flows import operations as ops
from assay.flows.demo import DEMO, SUITES
from assay.flows.report_html import AGREEMENT_COLOURS, COST_COLOURS, HEADINGS, MET_RATE_COLOUR, VERDICT_COLOURS, render
from assay.flows.workspace import open_workspace

ARTIFACTS = Path(os.environ.get("ASSAY_TEST_ARTIFACTS") or Path(__file__).resolve().parents[1] / "artifacts")
README_HEADING = "## HTML report"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both demo suites run and judged, and never projected: the first report has to project them."""
    home = tmp_path_factory.mktemp("report") / "home"
    ws = open_workspace(Settings(home=home), create=True)
    try:
        ops.load(ws, str(DEMO / "bundle.yaml"))
        for suite in SUITES:
            ops.run_to_final(ws, suite)
    finally:
        ws.close()
    return home


@pytest.fixture(scope="module")
def full(home: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    """``assay report --html PATH --json`` over everything: its document and the page."""
    path = tmp_path_factory.mktemp("pages") / "report.html"
    doc = json.loads(assay("report", "--html", str(path), "--json", home=home).stdout)
    return doc, path.read_text(encoding="utf-8")


def report(home: Path, path: Path, *options: str, check: int = 0) -> subprocess.CompletedProcess:
    return assay("report", "--html", str(path), *options, home=home, check=check, columns=80)


def test_the_report_is_one_self_contained_page(full: tuple[dict, str]) -> None:
    doc, page = full
    validate(doc)
    assert doc["projected"] is not None and doc["projected"]["runs"] == 2  # the tables were behind: projected first
    assert doc["sections"] == list(HEADINGS)
    counts = doc["counts"]
    assert {k: counts[k] for k in ("runs", "case_runs", "not_executed", "teams", "suites", "consumers")} == {
        "runs": 2, "case_runs": 16, "not_executed": 1, "teams": 2, "suites": 2, "consumers": 3}
    assert (counts["evaluator_pairs"], counts["charts"]) == (3, 4)  # one day: no chart over time
    assert counts["failing_behaviours"] >= 2 and counts["failing_behaviours"] <= counts["examples"] <= 3 * 25
    assert doc["bytes"] == len(page.encode("utf-8"))
    for heading in HEADINGS.values():
        assert f">{heading}</h" in page, heading
    # nothing a browser would fetch: no src at all, every link inside the page, no CSS url() or @import
    assert not re.search(r"\ssrc\s*=", page)
    assert all(target.startswith("#") for target in re.findall(r"""href\s*=\s*["']?([^"'\s>]*)""", page))
    assert "url(" not in page and "@import" not in page and "http://" not in page and "https://" not in page
    assert "<script" not in page
    # the failing behaviour of the config suite, with its example case runs and their reason
    failing = re.search(r'<section id="failing">.*?</section>', page).group(0)
    assert '<code class="id">every_variable_resolves</code>' in failing
    assert 'id="example-every_variable_resolves"' in page
    assert "unresolved variables: after_hours_fee" in page
    # data is escaped: quotes and apostrophes of reasons and transcripts
    assert "no turn by the agent contains &quot;outside&quot;" in page
    assert "I&#x27;m in Riverdale" in page and "I'm in Riverdale" not in page


def test_what_a_runner_could_not_evaluate_is_listed_apart_from_the_failing_behaviours(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws = open_workspace(Settings(home=home), create=True)
    try:
        ops.load(ws, str(DEMO / "bundle.yaml"))
        ops.run_to_final(ws, SUITES[0], "fixed")  # `fixed` reports only its own evaluations: no tool calls
    finally:
        ws.close()
    path = tmp_path / "report.html"
    report(home, path)
    page = path.read_text(encoding="utf-8")
    failing = re.search(r'<section id="failing">.*?</section>', page).group(0)
    apart = failing[failing.index('id="not-applicable"'):]
    assert '<code class="id">books_with_tool</code>' in apart and '<code class="id">fixed</code>' in apart
    assert '<code class="id">books_with_tool</code>' not in failing[:failing.index('id="not-applicable"')]


def test_every_string_from_the_data_is_escaped() -> None:
    evil = '<script>alert("x")</script>'
    example = {"assertion_key": evil, "case_key": evil, "run_id": evil, "case_run_id": evil, "reason": evil,
               "evaluator": evil, "source_ref": evil, "status": "executed", "error": None,
               "excerpt": [{"role": evil, "text": evil}], "turns": 1}
    coverage = {"runs": 1, "case_runs": 1, "not_executed": 0, "teams": 1, "suites": 1, "first_date": evil,
                "last_date": evil, "runners": [evil], "projected_at": datetime(2026, 1, 1, tzinfo=UTC)}
    counts = {"runs": 1, "pass": 0, "fail": 1, "error": 0, "not_judged": 0, "stamped_pass": 0, "stamped_fail": 1,
              "stamped_error": 0, "mixed_evaluators": True}
    page = render({
        "describe": evil, "period": evil, "generated_at": evil, "coverage": coverage,
        "verdicts": [{"consumer_key": evil, **counts}], "verdicts_by_date": [
            {"date": d, "consumer_key": evil, "runs": 1, "pass": 0} for d in ("2026-01-01", "2026-01-02")],
        "failing": [{"assertion_key": evil, "teams_failing": 1, "failing_teams": [evil], "failures": 1, "results": 1,
                     "met_rate": 0.0, "evaluators": [evil], "mixed_evaluators": False, "examples": [example]}],
        "failing_more": 0,
        "not_applicable": [{"assertion_key": evil, "runner": evil, "results": 2, "runs": 1}],
        "trend": [{"assertion_key": evil, "assertion_version": 1, "week": w, "teams": 1, "runs": 1, "results": 1,
                   "met": 0, "not_met": 1, "undetermined": 0, "met_rate": 0.0, "evaluators": [evil],
                   "mixed_evaluators": False} for w in ("2026-01-05", "2026-01-12")],
        "weekly": [{"assertion_key": evil, "team_id": evil, "week": evil, "runs": 1, "results": 1, "not_met": 1,
                    "undetermined": 0, "met_rate": 0.0, "versions": [1], "evaluators": [evil],
                    "mixed_evaluators": False}],
        "runner_costs": [{"team_id": evil, "week": evil, "runner": evil, "runs": 1, "case_runs": 1,
                          "runner_cost_usd": 1.0, "judge_cost_usd": None, "total_cost_usd": 1.0}],
        "consumer_costs": [{"consumer_key": evil, "runs": 1, "case_runs": 1, "runner_cost_usd": 1.0,
                            "judge_cost_usd": None, "total_cost_usd": 1.0}],
        "agreement": [{"behaviour": evil, "vendor_key": evil, "our_evaluator": evil, "vendor_evaluator": evil,
                       "team_id": evil, "pairs": 1, "decided": 1, "agree": 0, "disagree": 1, "agreement_rate": 0.0,
                       "we_pass_vendor_fails": 1, "we_fail_vendor_passes": 0}],
        "disagreements": [{"behaviour": evil, "case_key": evil, "source_ref": evil, "case_run_id": evil, "run_id": evil,
                           "our_met": True, "our_reason": evil, "vendor_met": False, "vendor_reason": evil}],
    })
    assert page.charts == 6  # with more than one day and week: the charts over time too
    assert "<script" not in page.html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page.html


def headless(exe: str, *args: str, profile: Path) -> subprocess.CompletedProcess:
    """Headless Chromium (``exe``) with every host unresolvable: the page must show without the network."""
    return subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={profile}",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1280,4000", *args],
        capture_output=True, text=True, timeout=180, check=True)


def first_row(image: Image.Image, colour: str, least: int = 40) -> int | None:
    """The first pixel row holding at least ``least`` pixels of exactly ``colour`` (#rrggbb)."""
    pixel = bytes.fromhex(colour[1:]) + b"\xff"  # RGBA: blue is never 0xff in our colours, so matches align
    data, width = image.convert("RGBA").tobytes(), image.width * 4
    return next((y for y in range(image.height) if data[y * width:(y + 1) * width].count(pixel) >= least), None)


def test_the_report_renders_in_headless_chromium(full: tuple[dict, str], chromium: str, tmp_path: Path) -> None:
    _, page = full
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    html, png = ARTIFACTS / "report.html", ARTIFACTS / "report.png"
    html.write_text(page, encoding="utf-8")
    png.unlink(missing_ok=True)
    headless(chromium, f"--screenshot={png}", html.as_uri(), profile=tmp_path / "profile")
    print(f"screenshot: {png}")
    image = Image.open(png)
    assert image.size == (1280, 4000)
    white = image.convert("L").histogram()[250:]
    assert sum(white) < 0.97 * 1280 * 4000, "the page is blank"
    # each chart shows, in section order: verdicts, trends (met rate), cost, agreement
    rows = {name: first_row(image, colour) for name, colour in {
        "fail": VERDICT_COLOURS["fail"], "error": VERDICT_COLOURS["error"], "met rate": MET_RATE_COLOUR,
        "runner cost": COST_COLOURS["runner"], "agree": AGREEMENT_COLOURS["agree"],
        "disagree": AGREEMENT_COLOURS["disagree"]}.items()}
    assert None not in rows.values(), rows
    assert rows["fail"] < rows["met rate"] < rows["runner cost"] < rows["agree"], rows
    assert abs(rows["agree"] - rows["disagree"]) < 5, rows  # one bar, two segments

    # the layout as the browser made it: every chart and every table outside a folded block has a size
    probe = ARTIFACTS / "report-probe.html"
    probe.write_text(page.replace("</body>", """<script>
addEventListener("load", () => {
  const size = (el) => [Math.round(el.getBoundingClientRect().width), Math.round(el.getBoundingClientRect().height)];
  const out = {charts: [...document.querySelectorAll("svg.chart")].map(size),
               tables: [...document.querySelectorAll("table")].filter((t) => !t.closest("details")).map(size),
               rows: document.querySelectorAll("#failing tbody tr").length};
  const pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);
  document.body.append(pre);
});
</script></body>"""), encoding="utf-8")
    dom = headless(chromium, "--dump-dom", probe.as_uri(), profile=tmp_path / "profile").stdout
    layout = json.loads(re.search(r'<pre id="probe">(.*?)</pre>', dom).group(1))
    assert len(layout["charts"]) == 4 and all(w > 600 and h > 30 for w, h in layout["charts"]), layout
    assert len(layout["tables"]) >= 6 and all(w > 100 and h > 40 for w, h in layout["tables"]), layout
    assert layout["rows"] == full[0]["counts"]["failing_behaviours"]


def test_a_team_or_a_suite_scopes_the_report(home: Path, tmp_path: Path) -> None:
    doc = json.loads(report(home, tmp_path / "team.html", "--team", "northside-hvac", "--json").stdout)
    page = (tmp_path / "team.html").read_text()
    assert doc["scope"] == {"team": "northside-hvac", "suite": None, "since": None, "until": None}
    assert (doc["counts"]["runs"], doc["counts"]["teams"], doc["counts"]["evaluator_pairs"]) == (1, 1, 3)
    assert doc["projected"] is None and "agreement" in doc["sections"]
    assert "team northside-hvac" in page and "every_variable_resolves" not in page and "acme-plumbing" not in page

    out = report(home, tmp_path / "suite.html", "--suite", "acme-plumbing/main-line")
    page = (tmp_path / "suite.html").read_text()
    assert "1 run(s), 4 case run(s), 1 team(s)" in out.stdout
    assert "suite acme-plumbing/main-line" in page and 'id="example-every_variable_resolves"' in page
    assert "northside-hvac" not in page and HEADINGS["agreement"] not in page  # no vendor evaluation there

    both = report(home, tmp_path / "x.html", "--suite", "acme-plumbing/main-line", "--team", "acme-plumbing", check=1)
    assert "give one" in both.stderr
    unknown = report(home, tmp_path / "x.html", "--team", "nobody", check=1)
    assert "nobody" in unknown.stderr and "acme-plumbing" in unknown.stderr
    nowhere = report(home, tmp_path / "no" / "x.html", check=1)
    assert "does not exist" in nowhere.stderr and not (tmp_path / "x.html").exists()


def test_a_period_is_the_runs_dates(home: Path, tmp_path: Path) -> None:
    day = json.loads(assay("query", "SELECT min(lake_date) AS day FROM runs", "--format", "json", home=home).stdout)[0]
    since = day["day"]
    doc = json.loads(report(home, tmp_path / "p.html", "--since", since, "--json").stdout)
    assert doc["counts"]["runs"] == 2 and doc["scope"]["since"] == since
    doc = json.loads(report(home, tmp_path / "p.html", "--until", since, "--json").stdout)  # the day left out
    assert doc["counts"]["runs"] == 0


def test_a_period_with_no_runs_says_so(home: Path, tmp_path: Path) -> None:
    out = report(home, tmp_path / "empty.html", "--since", "2001-01-01", "--until", "2001-02-01")
    assert "no finalised run in every team, runs from 2001-01-01 to before 2001-02-01" in out.stdout
    page = (tmp_path / "empty.html").read_text()
    assert "No finalised run in this scope and period" in page and HEADINGS["verdicts"] not in page
    doc = json.loads(report(home, tmp_path / "empty.html", "--until", "2001-01-01", "--json").stdout)
    assert doc["sections"] == ["summary"] and doc["counts"]["runs"] == 0
    backwards = report(home, tmp_path / "x.html", "--since", "2001-02-01", "--until", "2001-01-01", check=1)
    assert "is not before --until" in backwards.stderr
    report(home, tmp_path / "x.html", "--since", "last week", check=2)  # not a date: a malformed command line


def test_the_readme_block_runs(readme_walk, home: Path, tmp_path: Path) -> None:
    copy = tmp_path / "home"
    shutil.copytree(home, copy)
    assert_walked(README_HEADING, readme_walk(README_HEADING, copy))
    written = sorted(p.name for p in checkout(copy).glob("*.html"))
    assert written and all((checkout(copy) / name).stat().st_size > 1000 for name in written)
