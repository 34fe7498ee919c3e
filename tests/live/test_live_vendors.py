"""Live smoke tests: one small real call per vendor. They run only with ``ASSAY_LIVE_TESTS=1`` and the
vendor's key in the environment (``ASSAY_VAPI_API_KEY``, ``ASSAY_ELEVENLABS_API_KEY``,
``ASSAY_HAMMING_API_KEY``, ``ASSAY_JUDGE_BASE_URL`` + ``ASSAY_JUDGE_MODEL``); otherwise they skip and say
which variable is missing. Each creates only scratch objects, and proves they are gone afterwards.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import sqlalchemy as sa

from assay.core.settings import Settings

pytestmark = pytest.mark.live

LIVE = os.environ.get("ASSAY_LIVE_TESTS") == "1"
_ENV = {k: v for k, v in os.environ.items() if k.startswith("ASSAY_")}
"""Read at import: the workspace fixtures clear ``ASSAY_*`` for isolation, and these tests need the keys."""

CONFIG = {
    "name": "Assay live smoke test",
    "prompt": "You are a receptionist for a plumbing company. Answer in one short sentence.",
    "variables": {}, "tools": [], "first_message": "Hello, how can I help?",
}
SITUATION = {"caller": "Dana, homeowner", "wants": "To know the opening hours",
             "turns": ["What are your opening hours?"]}


def _needs(*names: str) -> None:
    if not LIVE:
        pytest.skip("live vendor tests run only with ASSAY_LIVE_TESTS=1")
    missing = [n for n in names if not _ENV.get(n)]
    if missing:
        pytest.skip(f"live test needs {', '.join(missing)}")


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings read from the environment captured at import (keys, base URLs), with a temporary home."""
    for key, value in _ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ASSAY_CATALOG_URL", raising=False)
    monkeypatch.delenv("ASSAY_LAKE_URL", raising=False)
    return Settings()


def _drive_one(engine: sa.Engine, tmp_path: Path, runner) -> tuple[str, object]:
    from runner_kit import case_runs, run, scratch_rows, seed

    from assay.storage.lake import Lake

    lake = Lake(str(tmp_path / "lake"), engine)
    suite = seed(engine, CONFIG, {"opening-hours": SITUATION})
    run_id, result, _ = run(engine, lake, suite, runner)
    stored = case_runs(lake, run_id)
    assert result.error is None, result.error
    assert stored.height == 1 and stored["status"][0] == "executed", stored["error"][0]
    assert len(stored["transcript"][0]) >= 2
    rows = scratch_rows(engine, run_id)
    assert rows and all(r.deleted_at is not None for r in rows), "scratch objects left at the vendor"
    return run_id, rows


@pytest.fixture
def sqlite_engine(tmp_path: Path):
    from assay.storage.catalog.engine import create_catalog_engine, migrate

    engine = create_catalog_engine(f"sqlite:///{tmp_path / 'catalog.db'}")
    migrate(engine)
    yield engine
    engine.dispose()


def test_vapi_chat_one_conversation(sqlite_engine: sa.Engine, tmp_path: Path, settings: Settings) -> None:
    _needs("ASSAY_VAPI_API_KEY")
    from assay.adapters.runners.vapi_chat import VapiChatRunner
    from assay.adapters.vapi import VapiApi

    _, rows = _drive_one(sqlite_engine, tmp_path, VapiChatRunner(settings))
    with VapiApi.from_settings(settings) as api:
        assert api.find_assistants(rows[0].name) == []


def test_elevenlabs_one_simulated_conversation(sqlite_engine: sa.Engine, tmp_path: Path, settings: Settings) -> None:
    _needs("ASSAY_ELEVENLABS_API_KEY")
    from assay.adapters.elevenlabs import ElevenLabsApi
    from assay.adapters.runners.elevenlabs_chat import ElevenLabsChatRunner

    _, rows = _drive_one(sqlite_engine, tmp_path, ElevenLabsChatRunner(settings, turns_limit=2))
    with ElevenLabsApi.from_settings(settings) as api:
        assert api.find_agents(rows[0].name) == []


def test_hamming_key_is_accepted(settings: Settings) -> None:
    """Hamming has no scratch objects and a run costs real calls: the smoke test asks for the status of a
    run that does not exist, which a valid key answers with 404 and a bad key with 401."""
    _needs("ASSAY_HAMMING_API_KEY")
    from assay.adapters.http import VendorClient
    from assay.core.errors import PermanentVendorError

    key = settings.hamming_api_key.get_secret_value()
    with VendorClient("hamming", settings.hamming_base_url, {"authorization": f"Bearer {key}"}) as client:
        with pytest.raises(PermanentVendorError) as err:
            client.get("/test-runs/assay-live-smoke-no-such-run/status")
    assert err.value.status == 404, err.value


def test_our_judge_gives_one_verdict(settings: Settings) -> None:
    """One rubric judged by the configured OpenAI-compatible endpoint: a verdict with a rationale and usage."""
    _needs("ASSAY_JUDGE_BASE_URL", "ASSAY_JUDGE_MODEL")
    from assay.adapters.judges import Judge

    evidence = "caller: What are your opening hours?\nagent: We are open Monday to Friday, 8am to 6pm."
    with Judge.from_settings(settings) as judge:
        judgement = judge.ask("The agent states the opening hours.", evidence)
    assert judgement.met is True, judgement
    assert judgement.reason and judgement.tokens_in
