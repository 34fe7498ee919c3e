"""Secrets never enter the record at its boundaries: loading (cases, targets) and reporting (evidence).

Each test plants made-up credentials where the data enters, then searches every catalog row and every
lake file for them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import sqlalchemy as sa
from factories import CONFIG, Clock, base, case, seed_suite, write

from assay.core.evidence import CaseRun, Evaluation, Report, ToolCall, Turn
from assay.storage.catalog import tables as t
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.catalog.load import load_bundle
from assay.storage.catalog.runs import create_run, job_for_run
from assay.storage.lake import Lake

WORLD_KEY = "sk-" + "w0rld" * 8
PROMPT_KEY = "sk-ant-api03-" + "pr0mpt" * 6
SERVER_SECRET = "whsec_" + "s3rv3r" * 5
DB_PASSWORD = "Pg-pa55word-91"
SECRETS = [WORLD_KEY, PROMPT_KEY, SERVER_SECRET, DB_PASSWORD]


def catalog_text(engine: sa.Engine) -> str:
    with engine.connect() as conn:
        return json.dumps([[list(r) for r in conn.execute(sa.select(table))] for table in t.metadata.sorted_tables],
                          default=str)  # fmt: skip


def _bundle(folder: Path, server_secret: str = SERVER_SECRET) -> Path:
    doc = base()
    case(doc)["situation"]["world"] = {"api_key": WORLD_KEY, "notes": f"the old key was {WORLD_KEY}"}
    path = write(folder, doc)
    config = {**CONFIG, "prompt": f"{CONFIG['prompt']} Internal key: {PROMPT_KEY}.",
              "server": {"url": f"postgresql://agent:{DB_PASSWORD}@db.internal/app", "secret": server_secret}}
    (folder / "configs" / "main.json").write_text(json.dumps(config))
    return path


def test_loading_stores_no_secret_and_a_reload_is_unchanged(engine: sa.Engine, tmp_path: Path) -> None:
    path = _bundle(tmp_path)
    load_bundle(engine, path)
    text = catalog_text(engine)
    assert [s for s in SECRETS if s in text] == []
    assert "Internal key: [redacted]." in text  # the rest of the prompt is kept
    again = load_bundle(engine, path)
    assert not again.changed


def test_rotating_a_key_in_the_config_is_a_change(engine: sa.Engine, tmp_path: Path) -> None:
    load_bundle(engine, _bundle(tmp_path))
    summary = load_bundle(engine, _bundle(tmp_path, server_secret="whsec_" + "r0tated" * 4))
    assert summary.counts["suites"].get("updated") == 1, summary.counts


def test_a_report_stores_no_secret_in_the_lake_or_the_catalog(engine: sa.Engine, tmp_path: Path) -> None:
    ledger = CatalogLedger(engine, Lake(str(tmp_path / "lake"), engine), clock=Clock())
    run_id = create_run(engine, seed_suite(engine), "fixed").run_id
    cases = job_for_run(engine, run_id).cases
    key = "sk-proj-" + "r3p0rt" * 8
    runs = [
        CaseRun(case_id=cases[0].case_id, transcript=[Turn(role="caller", text=f"Authorization: Bearer {key}")],
                tool_calls=[ToolCall(name="crm", arguments={"apiKey": key}, result=f"ok, used {key}")],
                provider_payload={"log": f"key={key}"}, artefact={"prompt": f"use {key}"},
                evaluations=[Evaluation(name="g", evaluator="vendor:g", verdict="fail", rationale=f"saw {key}",
                                        raw={"detail": key})]),
        CaseRun(case_id=cases[1].case_id, status="error", error=f"401: key {key} refused"),
    ]  # fmt: skip
    lease = ledger.claim(run_id, "w1", 60)
    assert ledger.report(lease, Report.from_case_runs("r1", runs)).status == "accepted"
    ledger.release(lease)
    found = [p for p in (tmp_path / "lake").rglob("*.parquet") if key in json.dumps(pq.read_table(p).to_pylist(),
                                                                                     default=str)]  # fmt: skip
    assert found == [] and key not in catalog_text(engine)
    rows = [r for p in (tmp_path / "lake").rglob("*.parquet") for r in pq.read_table(p).to_pylist()]
    assert any(r.get("error") == "401: key [redacted] refused" for r in rows)
