"""Calibrating an exam: its own noise, measured by replaying it under fixed conditions before it gates anything.

:func:`calibrate` replays a reviewed, fresh exam ``n`` times with the harness its ``exam.toml`` names, judges
each replay in-process against the exam's gating assertions (outcome and trajectory, bands aside, plus
``verify.sh`` when there is one) and counts the replays that *reproduce* the blessed work: every such assertion
met. From the count over the replays that did not error:

- ``reproducible``: the one-sided 95 % Wilson upper bound of the reproduction rate reaches the policy's healthy
  rate (:class:`~assay.transforms.exam_series.ExamPolicy`), so the exam can be held to it;
- ``flaky``: the upper bound is below it; the exam cannot be held to the healthy rate and is quarantined
  (reported, excluded from counts, never a FAIL);
- ``error``: every replay errored; nothing is written.

Otherwise it writes ``calibration.toml`` beside the exam (the conditions, the figures, the state) and sets each
``band`` assertion's ``center`` (the median) and ``spread`` (the scaled median absolute deviation) from the
reproduced replays, both only after every replay has finished.
"""

from __future__ import annotations

import re
import statistics
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict

from assay.adapters.runners.harness import HarnessAdapter, Replay, harness_for, replay
from assay.core.document_exams import CalibrateDoc as Calibration
from assay.core.document_exams import CalibratedBand as BandSet
from assay.core.document_exams import CalibrationSpread as Spread
from assay.core.errors import ConfigError, UsageError
from assay.core.evidence import Report, evaluation_schema
from assay.core.exam import (ASSERTIONS_FILE, VERIFY_KEY, Exam, ExamAssertion, load_exam, read_assertions,
                             write_assertions)
from assay.core.exam_checks import mechanism_for
from assay.core.files import replace_text
from assay.core.ids import canonical_json
from assay.core.toml_write import toml_dumps
from assay.transforms.exam_series import ExamPolicy
from assay.transforms.judge import evaluate
from assay.transforms.stats import wilson_lower, wilson_upper

from .exam_review import require_reviewed
from .exam_stale import stale_reasons

__all__ = ["CALIBRATION_FILE", "Calibration", "Gauge", "Spread", "calibrate", "gauges"]

CALIBRATION_FILE = "calibration.toml"
CALIBRATION_SCHEMA = "assay.exam.calibration"
GATING_TIERS = ("outcome", "trajectory")
"""The tiers a replay must meet to reproduce the exam (profile is diagnostic, judged never decides alone)."""
MAD_SCALE = 1.4826
"""Scales the median absolute deviation to a normal distribution's standard deviation."""
LEAST_SPREAD = 0.01
"""A band's spread is at least this share of its centre, so identical replays still leave a band."""
TINY_SPREAD = 1e-6
"""The spread of a band whose centre is 0 and whose replays all measured 0: never 0."""

State = Literal["reproducible", "flaky", "error"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Gauge(_Model):
    """One assertion a replay must meet to reproduce the exam."""

    key: str
    check: str
    mechanism: str
    params: dict[str, Any]


def gauges(exam: Exam) -> list[Gauge]:
    """What a replay of ``exam`` must meet to reproduce it: its accepted outcome and trajectory assertions
    except bands, each with its mechanism, then ``verify.sh`` when the exam has one."""
    out = []
    for a in exam.assertions:
        if a.status == "accepted" and a.tier in GATING_TIERS and a.check != "band":
            mechanism, params = mechanism_for(a.check, a.params)
            out.append(Gauge(key=a.key, check=a.check, mechanism=mechanism, params=params))
    if exam.verify_path is not None:
        out.append(Gauge(key=VERIFY_KEY, check="verify", mechanism="exam.verify", params={}))
    return out


def _judge(exam: Exam, replays: list[Replay], adapter: HarnessAdapter, checks: list[Gauge]) -> pl.DataFrame:
    """Each (replay, gauge): ``replay`` (its position), ``key``, ``met``, ``reason``, judged by the engine with
    what the adapter's evidence supports."""
    runs = [r.case_run(exam.spec.slug, f"calibration-{i}") for i, r in enumerate(replays)]
    ids = [str(i) for i in range(len(replays))]
    case_runs = pl.from_arrow(Report.from_case_runs("calibration", runs).case_runs).with_columns(
        case_run_id=pl.Series(ids, dtype=pl.String), runner=pl.lit(adapter.name))
    evaluations = pl.from_arrow(evaluation_schema().empty_table()).with_columns(case_run_id=pl.lit(None, pl.String))
    supported = {adapter.name: frozenset(g.mechanism for g in checks if g.check in adapter.supports)}
    assignments = pl.DataFrame(
        [{"case_run_id": i, "assertion_id": g.key, "assertion_key": g.key, "assertion_version": 1,
          "mechanism": g.mechanism, "params": canonical_json(g.params)} for i in ids for g in checks],
        schema={"case_run_id": pl.String, "assertion_id": pl.String, "assertion_key": pl.String,
                "assertion_version": pl.Int64, "mechanism": pl.String, "params": pl.String})
    results = evaluate(case_runs, evaluations, assignments, supported)
    return results.select(replay=pl.col("case_run_id").cast(pl.Int64), key="assertion_key", met="met",
                          reason="reason")


def _measure(r: Replay, measure: str) -> float | None:
    """What replay ``r`` used of ``measure``, as the band and cap checks read it (its session summary)."""
    value = r.artefact()["session"].get(measure)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _spread(values: Iterable[float | None]) -> Spread | None:
    known = sorted(v for v in values if v is not None)
    return Spread(min=known[0], median=statistics.median(known), max=known[-1]) if known else None


def _band(values: list[float]) -> tuple[float, float]:
    """A band's centre (the median) and spread (the scaled median absolute deviation, at least
    :data:`LEAST_SPREAD` of the centre, never 0)."""
    center = statistics.median(values)
    deviation = statistics.median(abs(v - center) for v in values)
    return center, max(MAD_SCALE * deviation, LEAST_SPREAD * abs(center)) or TINY_SPREAD


def _most_common(values: Iterable[str | None], default: str | None) -> str | None:
    counted = Counter(v for v in values if v)
    return counted.most_common(1)[0][0] if counted else default


def _calibrated_note(note: str | None, replays: int, day: str) -> str:
    """``note`` with its calibration mark replaced: "calibrated from N replays on DATE"."""
    kept = re.sub(r";? ?calibrated from \d+ replays? on \d{4}-\d{2}-\d{2}", "", note or "").strip()
    mark = f"calibrated from {replays} replay{'s' if replays != 1 else ''} on {day}"
    return f"{kept}; {mark}" if kept else mark


BandParams = dict[str, dict[str, Any]]
"""A band assertion's calibrated parameters, by key."""


def _set_bands(exam: Exam, adapter: HarnessAdapter,
               reproduced: list[Replay]) -> tuple[list[BandSet], dict[str, str], BandParams]:
    """The bands calibrated from the reproduced replays (each judged over them with its new parameters), the
    bands left as they were with why, and the new parameters by key."""
    bands, unset, params = [], {}, {}
    for a in exam.assertions:
        if a.check != "band":
            continue
        measure = str(a.params["measure"])
        values = [v for r in reproduced if (v := _measure(r, measure)) is not None]
        if not values:
            unset[a.key] = ("no replay reproduced the exam" if not reproduced
                            else f"the reproduced replays recorded no {measure}")
            continue
        center, spread = _band(values)
        params[a.key] = {**a.params, "center": center, "spread": spread}
        mechanism, checked = mechanism_for("band", params[a.key])
        judged = _judge(exam, reproduced, adapter, [Gauge(key=a.key, check="band", mechanism=mechanism,
                                                         params=checked)])
        bands.append(BandSet(key=a.key, measure=measure, k=float(a.params["k"]), center=center, spread=spread,
                             within=judged.filter(pl.col("met").eq_missing(True)).height))
    return bands, unset, params


def _refuse(exam: Exam, repo: Path) -> None:
    require_reviewed(exam)
    reasons = stale_reasons(exam, repo)
    if reasons:
        raise ConfigError(f"exam {exam.spec.slug!r} is stale, and calibrating a stale exam measures nothing; "
                          "nothing was written:\n" + "\n".join(f"- {r}" for r in reasons))


def _run_all(exam: Exam, repo: Path, adapter: HarnessAdapter, n: int, *, environ: Mapping[str, str] | None,
             parallel: int, timeout: float | None) -> list[Replay]:
    """``n`` replays, ``parallel`` at a time, each in its own worktree under one temporary parent."""
    with tempfile.TemporaryDirectory(prefix="assay-calibrate-") as parent, \
            ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="calibrate") as pool:
        return list(pool.map(lambda k: replay(exam, repo, adapter, parent=Path(parent), env=environ,
                                              timeout=timeout, replay_name=f"calibrate{k + 1}"), range(n)))


def calibrate(exam_dir: Path, repo: Path, n: int, *, environ: Mapping[str, str] | None = None, parallel: int = 1,
              timeout: float | None = None) -> Calibration:
    """Replay the exam at ``exam_dir`` ``n`` times in ``repo`` and measure how often it reproduces (see the
    module docstring); write ``calibration.toml`` and the bands unless every replay errored.

    ``environ`` is the harnesses' environment and configures the adapter (default: this process's);
    ``parallel`` replays run at once; ``timeout`` bounds each harness run in seconds (default: the exam's
    ``caps.max_wall_seconds``). An exam with drafts or a stale one is refused, with nothing written."""
    if n < 1 or parallel < 1:
        raise UsageError(f"calibrate needs at least one replay, run at least one at a time; got {n} replays, "
                         f"{parallel} at a time")
    exam, repo = load_exam(Path(exam_dir)), Path(repo)
    _refuse(exam, repo)
    checks = gauges(exam)
    adapter = harness_for(exam.spec.runner.name, environ)
    limit = timeout if timeout is not None else exam.spec.caps.max_wall_seconds
    replays = _run_all(exam, repo, adapter, n, environ=environ, parallel=parallel, timeout=limit)
    when = datetime.now(UTC).replace(microsecond=0)

    executed = [k for k, r in enumerate(replays) if r.outcome.status != "error"]
    judged = _judge(exam, replays, adapter, checks).filter(pl.col("replay").is_in(executed))
    misses = judged.filter(~pl.col("met").eq_missing(True))
    missed = set(misses["replay"].to_list())
    reproduced = [replays[k] for k in executed if k not in missed]

    def per_key(frame: pl.DataFrame) -> dict[str, int]:
        counted = Counter(frame["key"].to_list())
        return {g.key: counted[g.key] for g in checks if counted[g.key]}

    runs, x = len(executed), len(reproduced)
    state: State = "error" if not runs else ("reproducible" if wilson_upper(x, runs) >= ExamPolicy().healthy
                                             else "flaky")
    ran = [replays[k] for k in executed]
    costs = [r.outcome.cost_usd for r in ran if r.outcome.cost_usd is not None]
    sessions = [r.outcome.session for r in ran if r.outcome.session is not None]
    bands, unset, params = _set_bands(exam, adapter, reproduced) if runs else ([], {}, {})
    result = Calibration(
        exam=exam.spec.slug, path=str(exam.path), state=state, n=n, reproduced=x, errored=n - runs,
        rate=x / runs if runs else None, lower=wilson_lower(x, runs) if runs else None,
        upper=wilson_upper(x, runs) if runs else None, healthy=ExamPolicy().healthy,
        cost_mean=statistics.fmean(costs) if costs else None, cost_median=statistics.median(costs) if costs else None,
        turns=_spread(_measure(r, "turns") for r in ran), wall_seconds=_spread(r.wall_seconds for r in ran),
        failing=per_key(misses.filter(pl.col("met").eq_missing(False))),
        undetermined=per_key(misses.filter(pl.col("met").is_null())),
        errors=[str(r.outcome.error) for r in replays if r.outcome.status == "error"], bands=bands,
        bands_unset=unset, harness=adapter.name,
        harness_version=_most_common((s.harness_version for s in sessions), exam.spec.runner.version),
        model=_most_common((s.model for s in sessions), exam.spec.model),
        fingerprint=exam.spec.environment.fingerprint, when=when.isoformat().replace("+00:00", "Z"), written=[])
    if state == "error":
        return result
    return result.model_copy(update={"written": _write(exam, result, params, x, when)})


def _write(exam: Exam, result: Calibration, params: BandParams, replays: int,
           when: datetime) -> list[str]:
    """Write ``calibration.toml`` and the calibrated bands (status unchanged, the note marked); the files."""
    figures = result.model_dump(include={"n", "reproduced", "errored", "rate", "lower", "upper", "healthy",
                                         "cost_mean", "cost_median", "turns", "wall_seconds"})
    document = {"schema": CALIBRATION_SCHEMA, "revision": 1, "when": result.when, "state": result.state,
                "harness": {"name": result.harness, "version": result.harness_version}, "model": result.model,
                "fingerprint": result.fingerprint, "figures": figures, "failing": result.failing or None,
                "undetermined": result.undetermined or None,
                "bands": {b.key: {"measure": b.measure, "center": b.center, "spread": b.spread}
                          for b in result.bands} or None}  # fmt: skip
    replace_text(exam.path / CALIBRATION_FILE, toml_dumps(document))
    written = [CALIBRATION_FILE]
    if params:
        path = exam.path / ASSERTIONS_FILE
        day = when.date().isoformat()
        current: list[ExamAssertion] = list(read_assertions(path).assertion)
        write_assertions(path, [ExamAssertion.model_validate({**a.model_dump(), "params": params[a.key],
                                                              "note": _calibrated_note(a.note, replays, day)})
                                if a.key in params and a.check == "band" else a for a in current])
        written.append(ASSERTIONS_FILE)
    return written
