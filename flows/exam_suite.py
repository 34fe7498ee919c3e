"""A repository's exams in the record: one suite per exam, loaded as a bundle is.

An exam directory (``<repo>/.assay/exams/<slug>/``) becomes suite ``<team>/exam-<slug>`` (tagged ``exam``) with
one case, key ``<slug>``: its title and ask are the exam's instruction, its world the exam's conditions. Each
accepted exam assertion is an assertion of the case, its check turned into a mechanism
(:func:`~assay.core.exam_checks.mechanism_for`), and ``verify.sh``, when there is one, is ``verify_sh``. The
consumer ``exam_gate`` requires the outcome and trajectory keys and ignores the profile and judged ones (they
are diagnostics) and the bands calibration has not set yet (:func:`gates`), under the exam rule: a clean first batch holds, a failure escalates, the sequential test
decides (:mod:`assay.transforms.exam_series`). The suite's target is the exam itself (kind ``exam``).

The bundle is validated like any other, so the exam target is resolved there: loaded, every assertion
reviewed, its files digested. It is planned and applied in one transaction: loading the same exams again
changes nothing; an edited ``assertions.toml`` gives new assertion versions.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from assay.core.bundle import Bundle, validate_bundle
from assay.core.errors import BundleError, NotFoundError, SchemaVersionError
from assay.core.exam import EXAM_FILE, VERIFY_KEY, Exam, ExamAssertion, exam_digest, load_exam, unreviewed
from assay.core.exam_checks import mechanism_for
from assay.storage.catalog import tables as t
from assay.storage.catalog.load import apply_load, plan_load
from assay.transforms.exam_series import ExamPolicy

from .exam_distil import exams_root
from .workspace import Workspace

__all__ = ["CONSUMER", "TAG", "exam_bundle", "find_exams", "gates", "load_exams", "suite_key"]

CONSUMER = "exam_gate"
"""The consumer whose criteria decide an exam's replays under the exam rule."""
TAG = "exam"
"""The tag every exam suite carries."""
GATING = ("outcome", "trajectory")
"""The tiers whose assertions the consumer requires; the others are diagnostics it ignores."""
TITLE_CHARS = 120

_POLICY = ExamPolicy()


def suite_key(slug: str) -> str:
    """The key of the suite an exam becomes: ``exam-<slug>``."""
    return f"exam-{slug}"


def find_exams(repo: Path, names: Sequence[str] = ()) -> list[Path]:
    """Every exam directory of ``repo`` (a directory under ``.assay/exams/`` holding ``exam.toml``), sorted; or
    those ``names`` names, each a slug or a path to the directory, in the order given (each once)."""
    root = exams_root(repo)
    found = sorted(p for p in root.iterdir() if (p / EXAM_FILE).is_file()) if root.is_dir() else []
    if not names:
        return found
    by_slug = {path.name: path for path in found}
    picked: list[Path] = []
    for name in names:
        path = by_slug.get(name)
        if path is None:
            path = next((p for p in (Path(name), Path(repo) / name) if (p / EXAM_FILE).is_file()), None)
        if path is None:
            raise NotFoundError("exam", name, "name an exam by its slug or its directory (`assay distil` writes "
                                "one)", known=sorted(by_slug), known_as=f"exams in {root}")
        if path not in picked:
            picked.append(path)
    return picked


def exam_bundle(repo: Path, exam_dirs: Sequence[Path], *, team: str = "exams", repeat: int = _POLICY.replays,
                budget: int = _POLICY.budget, team_name: str | None = None) -> Bundle:
    """The bundle that makes each exam of ``exam_dirs`` a suite of ``team`` (named ``team_name``, default its
    id), validated with ``repo`` as its folder. One :class:`BundleError` refuses the whole set when any exam
    does not load, has drafts, or could never fail, naming each exam directory and its fix."""
    repo = Path(repo).resolve()
    if not exam_dirs:
        raise BundleError(str(exams_root(repo)), [("", "no exam to load; `assay distil` writes one from a blessed "
                                                        "session")])
    exams, problems = [], []
    for exam_dir in map(Path, exam_dirs):
        try:
            exam = load_exam(exam_dir)
        except (BundleError, SchemaVersionError) as exc:
            problems.append((str(exam_dir), "; ".join(str(exc).splitlines()) + " — fix it, then load again"))
            continue
        if problem := _unready(exam, repo):
            problems.append((str(exam_dir), problem))
        exams.append(exam)
    if problems:
        raise BundleError(str(exams_root(repo)), problems)
    raw = {
        "schema": "assay.bundle/v1",
        "consumers": [{"key": CONSUMER, "description": "Coding-agent exams: does the agent still do the work each "
                                                       "exam recorded, as often as it did?"}],
        "teams": [{"id": team, "name": team_name or team, "cases": [_case(e, repo) for e in exams],
                   "suites": [_suite(e, repo, repeat, budget) for e in exams]}],
    }
    return validate_bundle(raw, str(exams_root(repo)), base_dir=repo)


def load_exams(ws: Workspace, repo: Path, exam_dirs: Sequence[Path], *, team: str = "exams",
               repeat: int = _POLICY.replays, budget: int = _POLICY.budget) -> dict[str, Any]:
    """Load the exams of ``exam_dirs`` into the catalog, all or nothing: the load summary (``assay.load``'s
    body) and ``suites``, each exam's slug -> its suite (``TEAM/exam-SLUG``)."""
    with ws.engine.connect() as conn:  # an existing team keeps its name
        name = conn.execute(sa.select(t.teams.c.name).where(t.teams.c.team_id == team)).scalar()
    bundle = exam_bundle(repo, exam_dirs, team=team, repeat=repeat, budget=budget, team_name=name)
    with ws.engine.begin() as conn:
        summary = apply_load(conn, plan_load(conn, bundle))
    suites = {case.key: f"{team}/{suite_key(case.key)}" for case in bundle.teams[0].cases}
    return {**summary.to_dict(), "suites": suites}


def _unready(exam: Exam, repo: Path) -> str | None:
    """Why ``exam`` cannot be loaded as it is, or None."""
    path = exam.path.resolve()
    if path.parent != exams_root(repo):
        return (f"not an exam of {repo} (its exams are in {exams_root(repo)}); an exam replays in the repository "
                "that holds it — name one of its exams, or load from the repository that holds this one")
    drafts = unreviewed(exam)
    if drafts:
        shown = ", ".join(drafts[:10]) + (f" and {len(drafts) - 10} more" if len(drafts) > 10 else "")
        return (f"{len(drafts)} draft assertion(s) not yet reviewed: {shown}; an exam runs only once every "
                f"assertion is reviewed — accept or delete each with: assay review {exam.path}")
    if exam.verify_path is None and not any(a.tier in GATING for a in _accepted(exam)):
        return ("no outcome or trajectory assertion is accepted and there is no verify.sh, so no replay could "
                f"fail it; accept one (assay review {exam.path}) or add a verify.sh")
    return None


def _accepted(exam: Exam) -> list[ExamAssertion]:
    return [a for a in exam.assertions if a.status == "accepted"]


def _title(instruction: str) -> str:
    line = next(line.strip() for line in instruction.splitlines() if line.strip())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 3].rstrip() + "..."


def _case(exam: Exam, repo: Path) -> dict[str, Any]:
    spec = exam.spec
    world = {"slug": spec.slug, "dir": exam.path.resolve().relative_to(repo).as_posix(), "harness": spec.runner.name,
             "model": spec.model, "commit": spec.workspace.commit, "patch": exam.patch_path is not None,
             "verify": exam.verify_path is not None, "sha256": exam_digest(exam.path)}
    assertions = []
    for a in _accepted(exam):
        mechanism, params = mechanism_for(a.check, a.params)
        assertions.append({"key": a.key, "mechanism": mechanism, "params": params,
                           "description": f"{a.tier}: {a.note or a.check}"})
    if exam.verify_path is not None:
        assertions.append({"key": VERIFY_KEY, "mechanism": "exam.verify", "params": {},
                           "description": "outcome: verify.sh exits 0"})
    return {"key": spec.slug, "title": _title(exam.instruction),
            "situation": {"caller": f"a coding agent, run by the {spec.runner.name} harness",
                          "wants": exam.instruction.strip(), "world": {"exam": world}},
            "assertions": assertions}


def gates(assertion: ExamAssertion) -> bool:
    """Whether an accepted gating-tier assertion can gate yet: a ``band`` only once calibration has set its
    centre (``assay calibrate``); until then it is evaluated and reported, never deciding."""
    return assertion.check != "band" or assertion.params.get("center") is not None


def _suite(exam: Exam, repo: Path, repeat: int, budget: int) -> dict[str, Any]:
    accepted = _accepted(exam)
    required = [a.key for a in accepted if a.tier in GATING and gates(a)]
    required += [VERIFY_KEY] if exam.verify_path is not None else []
    ignore = [a.key for a in accepted if a.tier not in GATING or not gates(a)]
    sequential = {"healthy": _POLICY.healthy, "regressed": _POLICY.regressed, "alpha": _POLICY.alpha,
                  "beta": _POLICY.beta}
    criteria = {"required": required, "ignore": ignore,
                "pass_rate": {"min": _POLICY.regressed, "rule": "exam", "sequential": sequential}}
    return {"key": suite_key(exam.spec.slug), "name": f"exam {exam.spec.slug}",
            "target": {"exam": exam.path.resolve().relative_to(repo).as_posix()}, "cases": [exam.spec.slug],
            "criteria": {CONSUMER: criteria}, "tags": [TAG], "repeat": {"count": repeat, "budget": budget}}
