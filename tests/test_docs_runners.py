"""docs/runners.md stays true: its annotated example runner is executed through the real contract."""

from __future__ import annotations

import re
from pathlib import Path

import sqlalchemy as sa
from factories import seed_suite

from assay.core.runner import Runner, drive
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.catalog.runs import create_run, get_run, job_for_run
from assay.storage.lake import Lake

DOC = Path(__file__).resolve().parents[1] / "docs" / "runners.md"


def _example() -> type[Runner]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## An annotated example", 1)[1]
    [code] = re.findall(r"```python\n(.*?)```", section, flags=re.S)[:1]
    namespace: dict = {}
    exec(compile(code, str(DOC), "exec"), namespace)
    return namespace["GreeterRunner"]


def test_the_documented_example_runner_drives_a_run(engine: sa.Engine, tmp_path: Path) -> None:
    cls = _example()
    assert cls.name == "greeter" and cls.synchronous
    lake = Lake(str(tmp_path / "lake"), engine)
    ledger = CatalogLedger(engine, lake)
    run_id = create_run(engine, seed_suite(engine, criteria={}), "config_check").run_id
    result = drive(cls(), ledger, job_for_run(engine, run_id), owner="docs", ttl_seconds=60)
    assert result.error is None and result.case_runs == 2
    ledger.finalise(run_id)
    assert get_run(engine, run_id).status == "completed"
    stored = lake.read("case_runs", run_id=run_id)
    greetings = sorted(t[0]["text"] for t in stored["transcript"].to_list())
    assert greetings == ["Hello caller of case-1, how can I help?", "Hello caller of case-2, how can I help?"]


def test_the_documented_entry_point_group_is_the_one_assay_reads() -> None:
    from assay.core.plugins import ENTRY_POINT_GROUP

    assert f'[project.entry-points."{ENTRY_POINT_GROUP}"]' in DOC.read_text(encoding="utf-8")
