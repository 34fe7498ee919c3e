"""``assay judge-agreement``: a labelled set judged through the fake judge, figures printed and kept."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
import typer
from typer.testing import CliRunner

from assay.core.document_models import validate
from assay.core.errors import ConfigError, LabelsError
from assay.fakes.openai import FakeOpenAI
from assay.flows.agreement import measure
from assay.flows.cli_judge import register
from assay.flows.workspace import open_workspace
from assay.storage.catalog import tables as t

KEY = "sk-agreement-0123456789abcdef"


def item(n: int, expected: str, agent: str) -> dict:
    return {"id": f"item-{n}", "rubric": "The agent offers a refund.", "expected": expected,
            "transcript": [{"role": "caller", "text": f"Order {n} arrived broken."}, {"role": "agent", "text": agent}]}


# The judge (its rules below) says pass when the agent mentions a refund. Labels vs judge:
# both pass 4, label pass / judge fail 1, label fail / judge pass 2, both fail 3, and one the judge cannot read.
ITEMS = (
    [item(n, "pass", "I will refund you today.") for n in range(4)]
    + [item(4, "pass", "Sorry about that, we can help.")]
    + [item(n, "fail", "A refund is not possible, sorry.") for n in (5, 6)]
    + [item(n, "fail", "Please send a photo.") for n in (7, 8, 9)]
    + [item(10, "pass", "UNREADABLE")]
)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(key=KEY) as fake:
        fake.add_rule("UNREADABLE", "I think it passes")
        fake.add_rule("agent: [^\n]*refund", {"verdict": "pass", "rationale": "A refund was offered."})
        fake.add_rule(".", {"verdict": "fail", "rationale": "No refund was offered."})
        yield fake


@pytest.fixture
def judged_home(assay_home, monkeypatch: pytest.MonkeyPatch, server: FakeOpenAI) -> Path:
    monkeypatch.setenv("ASSAY_JUDGE_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("ASSAY_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("ASSAY_JUDGE_API_KEY", KEY)
    ws = open_workspace(create=True)
    with ws.engine.connect():  # as `assay init` does: opening it migrates the catalog
        pass
    ws.close()
    return assay_home


def labels(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    return path


def invoke(*args: str) -> str:
    app = typer.Typer()
    app.callback()(lambda: None)  # keep judge-agreement a sub-command, as on the real app
    register(app)
    result = CliRunner().invoke(app, ["judge-agreement", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_agreement_and_kappa_are_printed_and_kept(judged_home, server: FakeOpenAI, tmp_path: Path) -> None:
    path = labels(tmp_path, ITEMS)
    doc = json.loads(invoke(str(path), "--json"))
    assert doc["schema"] == "assay.judge-agreement"
    validate(doc)  # docs/schemas/assay.judge-agreement.json describes this document
    # p_o = 7/10; p_e = (5*6 + 5*4) / 100 = 0.5; kappa = 0.2 / 0.5 = 0.4.
    assert (doc["items"], doc["undetermined"], doc["unparsed"]) == (11, 1, 1)
    assert doc["agreement"] == pytest.approx(0.7) and doc["kappa"] == pytest.approx(0.4)
    assert doc["judge_calls"] == len(server.requests) == 11 and doc["judge_cached"] == 0
    assert {d["id"] for d in doc["disagreements"]} == {"item-4", "item-5", "item-6"}
    assert [u["id"] for u in doc["undetermined_items"]] == ["item-10"]
    ws = open_workspace()
    with ws.engine.connect() as conn:
        (row,) = conn.execute(sa.select(t.judge_agreements)).all()
    ws.close()
    assert (row.judge_model, row.prompt_version, row.items, row.undetermined) == ("judge-model", 1, 11, 1)
    assert row.kappa == pytest.approx(0.4) and row.labels == str(path) and len(row.details["items"]) == 11
    # Measured again: every verdict comes from the cache; only the unreadable answer is asked again.
    text = invoke(str(path))
    assert ("agreement 0.70, Cohen's kappa 0.40 over 10 decided item(s); 1 undetermined (counted in neither), "
            "1 of them an answer that could not be read as a verdict") in text
    assert "judge calls 1 (requests sent, retries included), 10 item(s) from the judge cache" in text
    assert ("item-10: labelled pass, no verdict: no verdict: judge: HTTP 200: the judge's answer holds no JSON object "
            "('I think it passes')") in text
    assert row.details["figures"]["unparsed"] == 1


@pytest.mark.parametrize(("mode", "unparsed"), [("refusal", 11), ("length", 11), ("error_200", 0)])
def test_answers_that_cannot_be_read_are_counted_apart_from_the_endpoints_failures(
        judged_home, server: FakeOpenAI, tmp_path: Path, mode: str, unparsed: int) -> None:
    if mode == "error_200":  # the endpoint fails: a 200 whose body is an error object
        server.faults.wild = {"error_200": "*"}
    else:
        server.answer_mode(mode)
    doc = json.loads(invoke(str(labels(tmp_path, ITEMS)), "--json"))
    validate(doc)
    assert (doc["items"], doc["undetermined"], doc["unparsed"]) == (11, 11, unparsed)
    assert doc["agreement"] is None and len(doc["undetermined_items"]) == 11


def test_a_malformed_labelled_set_is_refused_with_its_lines(judged_home, tmp_path: Path) -> None:
    rows = [ITEMS[0], {**ITEMS[1], "expected": "maybe"}, {"rubric": "x", "transcript": [], "expected": "pass", "extra": 1}]
    path = labels(tmp_path, rows)
    ws = open_workspace()
    with pytest.raises(LabelsError) as info:
        measure(ws, path)
    ws.close()
    message = str(info.value)
    assert f"{path}: line 2: expected: Input should be 'pass' or 'fail'" in message
    assert f"{path}: line 3: extra: Extra inputs are not permitted" in message


def test_without_a_judge_the_command_says_how_to_configure_one(assay_home, tmp_path: Path) -> None:
    ws = open_workspace(create=True)
    with pytest.raises(ConfigError, match="ASSAY_JUDGE_BASE_URL"):
        measure(ws, labels(tmp_path, ITEMS[:1]))
    ws.close()
