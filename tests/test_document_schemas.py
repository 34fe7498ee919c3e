"""Every machine-readable document has a model, its committed JSON Schema matches that model, and what
the real CLI prints validates against both (the model forbids unknown fields, so a field added without
its model fails here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError

from assay.core.document_models import BODIES, json_schema, rendered, validate
from assay.core.documents import DOCUMENTS

sys.path.insert(0, str(Path(__file__).parent / "flows"))
from command_line import assay  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "docs" / "schemas"
REGENERATE = "python -m assay.core.document_models docs/schemas"
MAIN = "acme-plumbing/main-line"


def test_every_document_has_a_model() -> None:
    assert set(BODIES) == set(DOCUMENTS), "add the body's model to assay.core.document_models.BODIES"


@pytest.mark.parametrize("schema_id", sorted(BODIES))
def test_the_committed_schema_matches_its_model(schema_id: str) -> None:
    path = SCHEMAS / f"{schema_id}.json"
    assert path.exists(), f"{path.relative_to(ROOT)} is missing: run `{REGENERATE}`"
    assert path.read_text() == rendered(schema_id), f"{path.relative_to(ROOT)} drifted from its model: run `{REGENERATE}`"
    jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))


def test_no_schema_file_without_a_document() -> None:
    assert sorted(p.stem for p in SCHEMAS.glob("*.json")) == sorted(BODIES)


def _check(document: dict) -> None:
    """The document validates against its model and against its committed JSON Schema."""
    validate(document)
    schema = json.loads((SCHEMAS / f"{document['schema']}.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """The demo bundle loaded and main-line run once; every cheap command's --json document, by command."""
    from assay.flows.demo import DEMO

    home = tmp_path_factory.mktemp("documents") / "home"

    def doc(*args: str) -> dict:
        return json.loads(assay(*args, "--json", home=home).stdout)

    docs = {"init": doc("init"), "load": doc("load", str(DEMO / "bundle.yaml")), "run": doc("run", MAIN)}
    run_id = docs["run"]["run"]["run_id"]
    docs["verdicts"] = doc("verdicts", run_id, "--cases")
    case_run = docs["verdicts"]["verdicts"][0]["cases"][0]["case_run_id"]
    docs |= {
        "runs list": doc("runs", "list"), "runs show": doc("runs", "show", run_id),
        "judge": doc("judge", run_id), "rejudge": doc("rejudge", "--run", run_id),
        "rescore": doc("rescore", MAIN, "--consumer", "publish_gate"), "plan": doc("plan", str(DEMO / "bundle.yaml")),
        "reap": doc("reap"), "collect": doc("collect"), "lake migrate": doc("lake", "migrate"),
        "lake compact": doc("lake", "compact"), "lake vacuum": doc("lake", "vacuum"),
        "ls": doc("ls"), "show": doc("show", case_run), "diff": doc("diff", run_id, run_id),
        "template ls": doc("template", "ls"), "version": doc("version"),
        "query": doc("query", "SELECT run_id, status FROM runs"), "fake-vendors": doc("fake-vendors", "--seconds", "0"),
    }
    for kind in ("teams", "suites", "cases", "assertions", "criteria", "consumers"):
        docs[f"ls {kind}"] = doc("ls", kind)
    return docs


@pytest.mark.parametrize("command", [
    "init", "load", "run", "verdicts", "runs list", "runs show", "judge", "rejudge", "rescore", "plan", "reap",
    "collect", "lake migrate", "lake compact", "lake vacuum", "ls", "ls teams", "ls suites", "ls cases",
    "ls assertions", "ls criteria", "ls consumers", "show", "diff", "template ls", "version", "query", "fake-vendors",
])
def test_the_real_cli_output_validates(documents: dict[str, dict], command: str) -> None:
    _check(documents[command])


def test_the_run_document_carries_each_consumers_verdict(documents: dict[str, dict]) -> None:
    doc = documents["run"]
    assert {v["consumer"]: v["verdict"] for v in doc["verdicts"]} == {
        "blueprint_ci": "pass", "nightly_sweep": "pass", "publish_gate": "fail"}


def test_the_query_and_fake_vendors_documents_say_what_the_text_says(documents: dict[str, dict]) -> None:
    answer = documents["query"]
    assert answer["columns"] == [{"name": "run_id", "type": "VARCHAR"}, {"name": "status", "type": "VARCHAR"}]
    assert answer["rows"] == [{"run_id": documents["run"]["run"]["run_id"], "status": "completed"}]
    assert answer["row_count"] == 1
    fakes = documents["fake-vendors"]
    assert {v["vendor"] for v in fakes["vendors"]} >= {"vapi", "elevenlabs", "hamming"}
    vapi = next(v for v in fakes["vendors"] if v["vendor"] == "vapi")
    assert fakes["env"]["ASSAY_VAPI_BASE_URL"] == vapi["url"] and f"{vapi['url']}/_fake/faults" in vapi["control"]


def test_the_benchmark_results_validate() -> None:
    _check(json.loads((ROOT / "bench" / "results.json").read_text()))


def test_an_unknown_field_or_a_stale_revision_is_refused(documents: dict[str, dict]) -> None:
    doc = documents["verdicts"]
    row = doc["verdicts"][0]
    with pytest.raises(ValidationError, match="surprise"):
        validate({**doc, "verdicts": [{**row, "surprise": 1}]})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**doc, "verdicts": [{**row, "surprise": 1}]}, json_schema("assay.verdicts"))
    with pytest.raises(ValidationError, match="revision"):
        validate({**documents["run"], "revision": 1})
    with pytest.raises(ValidationError, match="kind"):
        validate({**documents["ls"], "kind": "widgets"})


def test_the_version_document_names_every_schema_this_build_writes_and_the_exit_codes(
        documents: dict[str, dict]) -> None:
    doc = documents["version"]
    assert {r["schema"]: (r["revision"], r["stability"]) for r in doc["schemas"]} == DOCUMENTS
    assert all((SCHEMAS / f"{r['schema']}.json").exists() for r in doc["schemas"])
    codes = [r["code"] for r in doc["exit_codes"]]
    assert codes == [0, 1, 2, 80, 81, 82, 83]
