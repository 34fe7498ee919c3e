"""Vendor and judge keys never reach the lake, the catalog, logs or error messages.

A whole vendor chapter runs with known fake keys — VAPI and ElevenLabs conversations, a Hamming run
submitted and collected, our judge on the rubrics — plus a run whose key the vendor refuses. Then every
file written under ``ASSAY_HOME`` is searched for every key: raw bytes, every Parquet file's values
decoded, every catalog row, and everything logged or printed.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from assay.fakes.serve import FAKE_MODEL, running, settings_env
from assay.flows import operations as ops
from assay.flows.collect import collect_outstanding
from assay.flows.demo import DEMO
from assay.flows.demo_vendors import AGENT_RULES, SUITE
from assay.flows.judging import judge_runs
from assay.flows.workspace import open_workspace
from assay.storage.catalog import tables as t

KEYS = {"vapi": "sk-vapi-SECRET-7a1c93", "elevenlabs": "el-SECRET-93b2f0", "hamming": "ham-SECRET-55e0aa",
        "openai": "sk-openai-SECRET-d41f77"}
WRONG_KEY = "sk-vapi-WRONG-SECRET-0b9e"


def leaks(home: Path, engine: sa.Engine, secrets: list[str], text: str = "") -> list[str]:
    """Where any of ``secrets`` appears: files under ``home`` (raw, and Parquet values decoded), catalog rows, ``text``."""
    found = []
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        blobs = [path.read_bytes()]
        if path.suffix == ".parquet":
            blobs.append(json.dumps(pq.read_table(path).to_pylist(), default=str).encode())
        found += [f"{path.relative_to(home)}: {s}" for s in secrets for b in blobs if s.encode() in b]
    with engine.connect() as conn:
        for table in t.metadata.sorted_tables:
            rows = json.dumps([list(r) for r in conn.execute(sa.select(table))], default=str)
            found += [f"catalog {table.name}: {s}" for s in secrets if s in rows]
    found += [f"logs or output: {s}" for s in secrets if s in text]
    return sorted(set(found))


@pytest.fixture
def fakes():
    with running(keys=KEYS) as started:
        yield started


def test_no_key_is_kept_anywhere(assay_home: Path, fakes, monkeypatch: pytest.MonkeyPatch,
                                 caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    env = settings_env(fakes, KEYS) | {"ASSAY_CALLER_BASE_URL": fakes["openai"].url + "/v1",
                                       "ASSAY_CALLER_MODEL": FAKE_MODEL, "ASSAY_CALLER_API_KEY": KEYS["openai"]}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for vendor in ("vapi", "elevenlabs"):
        fakes[vendor].faults.scripts["replies"] = AGENT_RULES
    ws = open_workspace(create=True)
    ops.load(ws, str(DEMO / "bundle.yaml"))
    runs = {}
    for runner in ("vapi_chat", "elevenlabs_chat", "hamming"):
        run = ops.start_run(ws, SUITE, runner)
        result = ops.execute_run(ws, run.run_id)
        assert result.error is None, result.error
        runs[runner] = run.run_id
    assert runs["hamming"] in collect_outstanding(ws).finalised
    judged = judge_runs(ws, [runs["vapi_chat"], runs["elevenlabs_chat"]])
    assert judged["judge_calls"] >= 2  # our judge was called with its key

    monkeypatch.setenv("ASSAY_VAPI_API_KEY", WRONG_KEY)  # the vendor refuses this one: the error is stored
    refused = ops.start_run(ws, SUITE, "vapi_chat")
    result = ops.execute_run(ws, refused.run_id)
    assert result.error and "ASSAY_VAPI_API_KEY" in result.error

    printed = capsys.readouterr()
    found = leaks(assay_home, ws.engine, [*KEYS.values(), WRONG_KEY], caplog.text + printed.out + printed.err)
    ws.close()
    assert found == [], f"keys kept: {found}"


def test_the_search_finds_a_planted_key(assay_home: Path, tmp_path: Path) -> None:
    """The check above can fail: a key written into a Parquet value, a catalog row or a log is found."""
    import pyarrow as pa

    ws = open_workspace(create=True)
    assay_home.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"payload": [json.dumps({"note": KEYS["vapi"]})]}), assay_home / "planted.parquet",
                   compression="zstd")
    with ws.engine.begin() as conn:
        conn.execute(t.teams.insert().values(team_id="t", name=KEYS["hamming"], created_at=datetime.now(UTC)))
    found = leaks(assay_home, ws.engine, list(KEYS.values()), text=f"error: bad key {KEYS['openai']}")
    ws.close()
    assert any("planted.parquet" in f and KEYS["vapi"] in f for f in found)
    assert f"catalog teams: {KEYS['hamming']}" in found and f"logs or output: {KEYS['openai']}" in found
