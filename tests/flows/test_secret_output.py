"""Secrets never leave through what we print or what the judge says.

- ``assay init`` prints the catalog URL with its password masked.
- Our judge's rationale (it may quote the evidence) is redacted before it is cached or returned.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
import sqlalchemy as sa

from assay.adapters.judges import Judgement
from assay.flows import cli, judge_calls
from assay.storage.catalog import tables as t

PASSWORD = "pg-S3cret-pw-77"
KEY = "sk-proj-" + "qu0ted" * 8


def test_init_prints_the_catalog_url_with_its_password_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    url = f"postgresql+psycopg://assay:{PASSWORD}@db.internal:5432/assay"
    settings = SimpleNamespace(home=tmp_path, resolved_catalog_url=url, resolved_lake_url=str(tmp_path / "lake"))
    engine = sa.create_engine("sqlite://")
    lake = SimpleNamespace(check_layout=lambda creating: None)
    monkeypatch.setattr(cli, "_workspace", lambda create=False: SimpleNamespace(settings=settings, engine=engine,
                                                                                lake=lake))  # fmt: skip
    cli.init(as_json=True)
    cli.init(as_json=False)
    out = capsys.readouterr().out
    assert PASSWORD not in out
    assert json.loads(out[: out.index("\n}") + 2])["catalog"] == "postgresql+psycopg://assay:***@db.internal:5432/assay"


class _QuotingJudge:
    """A judge whose rationale quotes a key it saw in the evidence."""

    sent = 1

    def __enter__(self) -> _QuotingJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def ask_many(self, questions: list[tuple[str, str]], on_answer=None) -> list[Judgement]:
        return [Judgement(True, f"The agent read out {KEY} to the caller.", 10, 5, None) for _ in questions]


def test_the_judges_rationale_is_redacted_before_it_is_cached(engine: sa.Engine,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge_calls.Judge, "from_settings", classmethod(lambda cls, settings, retry: _QuotingJudge()))
    ws = SimpleNamespace(engine=engine, settings=SimpleNamespace(judge_usd_per_1k_tokens_in=None,
                                                                 judge_usd_per_1k_tokens_out=None))  # fmt: skip
    todo = pl.DataFrame({"assertion_id": ["a1"], "evidence_hash": ["h1"], "rubric": ["r"], "evidence": ["e"]})
    out, _ = judge_calls.ask_cached(ws, "judge-model", todo)  # type: ignore[arg-type]
    assert out[0].reason == "The agent read out [redacted] to the caller."
    with engine.connect() as conn:
        cached = json.dumps([list(r) for r in conn.execute(sa.select(t.judge_cache))], default=str)
    assert KEY not in cached and "[redacted]" in cached


def test_log_records_are_redacted_before_any_handler_sees_them(caplog) -> None:
    import logging

    from assay.core.redact import install_log_redaction

    install_log_redaction()
    install_log_redaction()  # idempotent: one redacting factory, not two
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
    log = logging.getLogger("assay.flows.somewhere")
    with caplog.at_level(logging.INFO):
        log.warning("calling the judge with %s", secret)
        try:
            raise RuntimeError(f"refused key {secret}")
        except RuntimeError:
            log.exception("it failed")
        logging.getLogger("unrelated.library").warning("left alone: %s", "sk-proj-zyxwvutsrqponmlkjihgfedcba9876543210DCBA")
    text = caplog.text
    assert secret not in text and "calling the judge with" in text and "[redacted]" in text
    assert "RuntimeError: refused key [redacted]" in text  # the traceback is kept, redacted
    assert "sk-proj-zyxwvutsrqponmlkjihgfedcba9876543210DCBA" in text  # other libraries' records are not ours to touch
