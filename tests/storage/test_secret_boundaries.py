"""Secrets never enter the record at its boundaries: loading (cases, targets) and reporting (evidence).

Each test plants made-up credentials where the data enters, then searches every catalog row and every
lake file for them. :func:`test_a_secret_planted_anywhere_is_nowhere_in_the_record` is the conformance
form: one secret per place a user's text enters (a bundle's names, titles and descriptions; a call
set's fields and provider payloads, keys at any depth), one workspace holding them all, and every place
checked in the catalog, the lake's Parquet files and what ``assay ls cases`` and ``assay query`` print.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from command_line import assay as assay_cli
from factories import CALLS, CONFIG, Clock, base, case, seed_suite, suite, write

from assay.core.errors import BundleError
from assay.core.evidence import CaseRun, Evaluation, Report, ToolCall, Turn
from assay.core.settings import Settings
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


# --- every place, one workspace --------------------------------------------------------------------

Doc = dict[str, Any]


@dataclass(frozen=True)
class Plant:
    """One place a user's text enters the record, and a made-up secret planted there."""

    id: str
    secret: str
    plant: Callable[[Doc, Doc, str], None]
    """Puts the secret in the bundle document or the recorded call (the call set's one line)."""
    stored: str
    """SQL (``assay query``) giving the stored value; it must show ``[redacted]`` where the secret was."""


def _token(tag: str) -> str:
    """A secret no rule knows by its shape: only its key or the words around it give it away."""
    return f"Zq{tag}7x{tag}9Kw{tag}"


def _set(doc: Doc, value: Any, *path: str | int) -> None:
    for part in path[:-1]:
        doc = doc.setdefault(part, {}) if isinstance(part, str) else doc[part]
    doc[path[-1]] = value


def _call_value(expression: str) -> str:
    return f"SELECT {expression} AS v FROM case_runs WHERE source_ref = 'call-1'"


def _leak_assertion(doc: Doc, secret: str) -> None:
    recorded = suite(doc, 1)
    recorded["assertions"].append({"key": "no-leak", "mechanism": "transcript.contains",
                                   "params": {"text": f"api_key={secret}"}})  # fmt: skip
    recorded["criteria"]["ci"]["required"].append("no-leak")


PLANTS = [
    Plant("case title", "sk-proj-" + "t1tle" * 8, lambda d, c, k: _set(case(d), f"Caller reads {k} aloud", "title"),
          "SELECT title AS v FROM cases WHERE case_key = 'outside-area'"),
    Plant("suite name", "ghp_" + "Suite9name" * 4, lambda d, c, k: _set(suite(d, 1), f"Recorded ({k})", "name"),
          "SELECT name AS v FROM suites WHERE suite_key = 'recorded'"),
    Plant("team name", _token("team"), lambda d, c, k: _set(d["teams"][0], f"Acme password={k}", "name"),
          "SELECT name AS v FROM teams"),
    Plant("consumer description", _token("cons"),
          lambda d, c, k: _set(d["consumers"][0], f"CI, with token: {k}", "description"),
          "SELECT description AS v FROM consumers WHERE consumer_key = 'ci'"),
    Plant("assertion description", "xoxb-" + "4ssert10n" * 3,
          lambda d, c, k: _set(case(d)["assertions"][0], f"Says it plainly; bot {k}", "description"),
          "SELECT description AS v FROM assertions WHERE assertion_key = 'declines'"),
    Plant("assertion parameter", _token("param"), lambda d, c, k: _leak_assertion(d, k),
          "SELECT params AS v FROM assertions WHERE assertion_key = 'no-leak'"),
    Plant("payload sessionid", _token("sidA"), lambda d, c, k: _set(c, k, "provider_payload", "sessionid"),
          _call_value("json_extract_string(provider_payload, '$.sessionid')")),
    Plant("payload sessionId at depth", _token("sidB"),
          lambda d, c, k: _set(c, [{"client": {"sessionId": k}}], "provider_payload", "meta", "clients"),
          _call_value("json_extract_string(provider_payload, '$.meta.clients[0].client.sessionId')")),
    Plant("payload JSESSIONID header", _token("jsid"),
          lambda d, c, k: _set(c, k, "provider_payload", "headers", "X-JSESSIONID"),
          _call_value("json_extract_string(provider_payload, '$.headers.\"X-JSESSIONID\"')")),
    Plant("payload PHPSESSID cookie", _token("php"),
          lambda d, c, k: _set(c, k, "provider_payload", "cookies", "PHPSESSID"),
          _call_value("json_extract_string(provider_payload, '$.cookies.PHPSESSID')")),
    Plant("payload connect.sid cookie", _token("conn"),
          lambda d, c, k: _set(c, k, "provider_payload", "jar", "connect.sid"),
          _call_value("json_extract_string(provider_payload, '$.jar.\"connect.sid\"')")),
    Plant("payload sessionToken", _token("tok"),
          lambda d, c, k: _set(c, k, "provider_payload", "auth0", "sessionToken"),
          _call_value("json_extract_string(provider_payload, '$.auth0.sessionToken')")),
    Plant("payload JSON text", _token("text"),
          lambda d, c, k: _set(c, json.dumps({"sessionId": k}), "provider_payload", "body"),
          _call_value("json_extract_string(provider_payload, '$.body')")),
    Plant("transcript", _token("turn"),
          lambda d, c, k: _set(c, [{"role": "caller", "text": f"my sessionid={k} ok?"}], "transcript"),
          _call_value("transcript[1].text")),
    Plant("tool-call arguments", _token("tool"),
          lambda d, c, k: _set(c, [{"name": "crm", "arguments": {"Set-Cookie": k}}], "tool_calls"),
          _call_value("tool_calls[1].arguments")),
    Plant("evaluation rationale and raw", _token("eval"), lambda d, c, k: _set(c, [{
        "name": "g", "evaluator": "v:g", "verdict": "pass", "rationale": f"password is {k}1",
        "raw": {"x": {"sessId": k}}}], "evaluations"),
        "SELECT rationale || ' ' || raw AS v FROM runner_evaluations WHERE source_ref = 'call-1'"),
    Plant("provider ref", "sk-" + "pr0v1der" * 4, lambda d, c, k: _set(c, f"ref {k}", "provider_ref"),
          _call_value("provider_ref")),
    Plant("vendor error", _token("err"), lambda d, c, k: _set(c, f"401: Cookie: sid={k}", "error"),
          _call_value("error")),
]  # fmt: skip


@dataclass(frozen=True)
class Planted:
    """The workspace holding every plant, and the record as text: catalog rows, lake files, printed output."""

    home: Path
    env: dict[str, str]
    catalog: str
    lake: str
    printed: str


_VIEWS = ("cases", "suites", "teams", "consumers", "assertions", "case_runs", "runner_evaluations", "turns")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def planted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Planted:
    """A workspace that loaded a bundle with every plant and ran its recorded suite."""
    from assay.flows import operations as ops
    from assay.flows.workspace import open_workspace

    folder = tmp_path_factory.mktemp("plants")
    env = {}
    if request.param == "postgres":
        env["ASSAY_CATALOG_URL"] = request.getfixturevalue("module_postgres_url")
    doc, call = base(), {**CALLS[0], "call_id": "call-1"}
    for p in PLANTS:
        p.plant(doc, call, p.secret)
    path = write(folder, doc)
    (folder / "calls" / "recorded.jsonl").write_text(json.dumps(call) + "\n")
    assert all(p.secret in path.read_text() + json.dumps(call) for p in PLANTS)  # each one was planted
    home = folder / "home"
    ws = open_workspace(Settings(home=home, catalog_url=env.get("ASSAY_CATALOG_URL")), create=True)
    try:
        ops.load(ws, str(path))
        run_id = ops.start_run(ws, "acme/recorded").run_id
        ops.execute_run(ws, run_id)
        ops.finish_run(ws, run_id)
        catalog = catalog_text(ws.engine)
    finally:
        ws.close()
    files = list((home / "lake").rglob("*.parquet"))
    assert files
    lake = json.dumps([pq.read_table(f).to_pylist() for f in files], default=str)
    printed = [assay_cli("ls", "cases", home=home, extra_env=env).stdout,
               assay_cli("ls", "cases", "--json", home=home, extra_env=env).stdout,
               *(_query(home, env, f"SELECT * FROM {view}") for view in _VIEWS)]  # fmt: skip
    assert "outside-area" in printed[0] and "call-1" in printed[2 + _VIEWS.index("case_runs")]
    return Planted(home, env, catalog, lake, "\n".join(printed))


def _query(home: Path, env: dict[str, str], sql: str) -> str:
    return assay_cli("query", sql, "--format", "json", home=home, extra_env=env).stdout


@pytest.mark.parametrize("plant", PLANTS, ids=[p.id for p in PLANTS])
def test_a_secret_planted_anywhere_is_nowhere_in_the_record(planted: Planted, plant: Plant) -> None:
    stored = json.loads(_query(planted.home, planted.env, plant.stored))
    assert stored and all("[redacted]" in str(row) for row in stored), stored  # the place was reached, and redacted
    assert plant.secret not in planted.catalog
    assert plant.secret not in planted.lake
    assert plant.secret not in planted.printed


@pytest.mark.parametrize(("where", "put"), [
    ("case key", lambda d, k: _set(case(d), k, "key")),
    ("suite key", lambda d, k: _set(suite(d, 1), k, "key")),
    ("assertion key", lambda d, k: _set(case(d)["assertions"][0], k, "key")),
    ("team id", lambda d, k: _set(d["teams"][0], k, "id")),
])  # fmt: skip
def test_an_identifier_that_looks_like_a_credential_is_refused(
    engine: sa.Engine, tmp_path: Path, where: str, put: Callable[[Doc, str], None]
) -> None:
    """Keys are stored and printed as written, so they cannot be redacted: the bundle is refused instead."""
    key = "sk-proj-" + "k3yl1ke" * 4
    doc = base()
    put(doc, key)
    with pytest.raises(BundleError) as info:
        load_bundle(engine, write(tmp_path, doc))
    message = str(info.value)
    assert "looks like a credential (openai/anthropic key)" in message and "cannot be redacted" in message, message
    assert key not in catalog_text(engine)
