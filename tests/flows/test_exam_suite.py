"""A repository's exams loaded into the record, on each catalog database: an exam the fake harness really
worked, distilled and reviewed becomes suite ``exams/exam-<slug>`` with one case, an assertion per accepted
exam assertion (and ``verify_sh``), the ``exam_gate`` criteria under the exam rule, and an ``exam`` target.
Loading it again changes nothing; an edited ``assertions.toml`` gives new versions; an exam with drafts, or a
broken one, refuses the whole set and nothing is written."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from assay.adapters.capture import find_session, read_session
from assay.core.errors import BundleError, NotFoundError
from assay.core.exam import ASSERTIONS_FILE, EXAM_FILE, VERIFY_FILE, exam_digest, load_exam, write_assertions
from assay.core.exam_checks import mechanism_for
from assay.flows.exam_distil import distil
from assay.flows.exam_review import review
from assay.flows.exam_suite import exam_bundle, find_exams, load_exams
from assay.flows.workspace import Workspace, open_workspace
from assay.storage.catalog import listing, tables as t

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))
from test_fake_harness import ASK, worked_repo  # noqa: E402

SLUG = "half-cent"
EXAM_DIR = f".assay/exams/{SLUG}"


@pytest.fixture(scope="module")
def distilled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository the fake harness fixed the bug in, holding its exam, every assertion accepted."""
    root = tmp_path_factory.mktemp("exam-suite")
    repo, home, session_id = worked_repo(root)
    exam_dir = distil(read_session(Path(find_session(repo, session_id, {"HOME": str(home)}).path)), repo, slug=SLUG)
    review(exam_dir, accept_all=True)
    return repo


@pytest.fixture
def repo(distilled: Path, tmp_path: Path) -> Path:
    """A fresh copy of the repository (tests edit its exam)."""
    return Path(shutil.copytree(distilled, tmp_path / "shop", symlinks=True)).resolve()


@pytest.fixture
def ws(assay_home: Path, catalog_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    monkeypatch.setenv("ASSAY_CATALOG_URL", catalog_url)
    workspace = open_workspace(create=True)
    yield workspace
    workspace.close()


def _rows(ws: Workspace, table: sa.Table) -> list[sa.Row]:
    with ws.engine.connect() as conn:
        return list(conn.execute(sa.select(table)))


def _copy_exam(repo: Path, slug: str) -> Path:
    """A second exam beside the first: the same files under another slug."""
    target = repo / ".assay" / "exams" / slug
    shutil.copytree(repo / EXAM_DIR, target)
    spec = target / EXAM_FILE
    spec.write_text(spec.read_text().replace(f'slug = "{SLUG}"', f'slug = "{slug}"'))
    assert load_exam(target).spec.slug == slug
    return target


def test_an_exam_becomes_a_suite_with_one_case(ws: Workspace, repo: Path) -> None:
    exam = load_exam(repo / EXAM_DIR)
    loaded = load_exams(ws, repo, find_exams(repo))
    assert loaded["suites"] == {SLUG: f"exams/exam-{SLUG}"} and loaded["changed"] is True
    accepted = [a for a in exam.assertions if a.status == "accepted"]
    assert len(accepted) == len(exam.assertions) > 4 and exam.verify_path is not None
    counts = loaded["counts"]
    assert counts["suites"]["created"] == counts["cases"]["created"] == counts["criteria"]["created"] == 1
    assert counts["assertions"]["created"] == len(accepted) + 1  # and verify.sh

    [suite] = _rows(ws, t.suites)
    assert (suite.team_id, suite.suite_key, suite.target_kind) == ("exams", f"exam-{SLUG}", "exam")
    assert suite.tags == ["exam"]
    assert suite.target == {"exam": {"repo": str(repo), "dir": EXAM_DIR, "harness": exam.spec.runner.name,
                                     "sha256": exam_digest(repo / EXAM_DIR)}}
    assert suite.repeat == {"count": 5, "budget": 60}

    [case] = _rows(ws, t.cases)
    assert case.case_key == SLUG and case.title == ASK
    situation = case.content["situation"]
    assert situation["caller"] == f"a coding agent, run by the {exam.spec.runner.name} harness"
    assert situation["wants"] == exam.instruction.strip()
    assert situation["world"]["exam"] == {
        "slug": SLUG, "dir": EXAM_DIR, "harness": exam.spec.runner.name, "model": exam.spec.model,
        "commit": exam.spec.workspace.commit, "patch": True, "verify": True, "sha256": exam_digest(repo / EXAM_DIR)}
    assert [m.case_id for m in _rows(ws, t.suite_cases)] == [case.case_id]

    stored = {a.assertion_key: a for a in _rows(ws, t.assertions)}
    assert all(a.case_id == case.case_id and a.suite_id is None and a.version == 1 for a in stored.values())
    for a in accepted:
        mechanism, params = mechanism_for(a.check, a.params)
        assert (stored[a.key].mechanism, stored[a.key].params) == (mechanism, params)
        assert stored[a.key].description.startswith(f"{a.tier}: ")
    assert (stored["verify_sh"].mechanism, stored["verify_sh"].params) == ("exam.verify", {})

    [criteria] = _rows(ws, t.criteria)
    assert criteria.consumer_key == "exam_gate"
    uncalibrated = {a.key for a in accepted if a.check == "band"}  # distil leaves a band's centre to calibration
    assert uncalibrated and all(a.params.get("center") is None for a in accepted if a.key in uncalibrated)
    gating = {a.key for a in accepted if a.tier in ("outcome", "trajectory")} - uncalibrated | {"verify_sh"}
    assert criteria.spec["required"] == sorted(gating)
    assert criteria.spec["ignore"] == sorted({a.key for a in accepted if a.tier in ("profile", "judged")}
                                             | uncalibrated)
    assert criteria.spec["ignore"] and not set(criteria.spec["ignore"]) & gating
    assert criteria.spec["pass_rate"]["rule"] == "exam" and criteria.spec["pass_rate"]["min"] == 0.8
    assert criteria.spec["pass_rate"]["sequential"] == {"healthy": 0.95, "regressed": 0.8, "alpha": 0.05, "beta": 0.1}
    assert [c.consumer_key for c in _rows(ws, t.consumers)] == ["exam_gate"]
    with ws.engine.connect() as conn:
        [listed] = listing.suites(conn, listing.Scope())
    assert (listed["suite"], listed["target_kind"], listed["target"]) == (f"exams/exam-{SLUG}", "exam", EXAM_DIR)
    assert listed["consumers"] == ["exam_gate"] and listed["tags"] == ["exam"] and listed["cases"] == 1


def test_loading_again_changes_nothing_and_an_edit_is_a_new_version(ws: Workspace, repo: Path) -> None:
    first = load_exams(ws, repo, find_exams(repo), repeat=3, budget=30)
    again = load_exams(ws, repo, find_exams(repo), repeat=3, budget=30)
    assert first["changed"] is True and again["changed"] is False and again["new_versions"] == []
    assert again["suites"] == first["suites"]
    assert _rows(ws, t.suites)[0].repeat == {"count": 3, "budget": 30}

    path = repo / EXAM_DIR / ASSERTIONS_FILE
    assertions = list(load_exam(repo / EXAM_DIR).assertions)
    i = next(i for i, a in enumerate(assertions) if a.check == "cap")
    edited = assertions[i]
    assertions[i] = edited.model_copy(update={"params": {**edited.params, "max": edited.params["max"] + 5}})
    write_assertions(path, assertions)
    changed = load_exams(ws, repo, find_exams(repo), repeat=3, budget=30)
    assert changed["new_versions"] == [f"exams/{SLUG} (case): assertion {edited.key} v2"]
    assert changed["counts"]["cases"]["updated"] == 1  # the exam's digest is part of the case's world
    assert changed["counts"]["suites"]["updated"] == 1  # and of its target
    versions = {(a.assertion_key, a.version): a.params for a in _rows(ws, t.assertions)}
    assert versions[(edited.key, 2)]["max"] == edited.params["max"] + 5 and (edited.key, 1) in versions
    [suite] = _rows(ws, t.suites)
    assert suite.target["exam"]["sha256"] == exam_digest(repo / EXAM_DIR)


def test_an_exam_with_drafts_refuses_the_whole_set(ws: Workspace, repo: Path) -> None:
    other = _copy_exam(repo, "other-exam")
    path = other / ASSERTIONS_FILE
    assertions = list(load_exam(other).assertions)
    write_assertions(path, [assertions[0].model_copy(update={"status": "draft"}), *assertions[1:]])
    with pytest.raises(BundleError) as refused:
        load_exams(ws, repo, find_exams(repo))
    assert [where for where, _ in refused.value.problems] == [str(other)]
    assert f"assay review {other}" in str(refused.value) and assertions[0].key in str(refused.value)
    assert _rows(ws, t.suites) == [] and _rows(ws, t.teams) == [] and _rows(ws, t.assertions) == []


def test_every_broken_exam_is_named(repo: Path) -> None:
    drafts = _copy_exam(repo, "drafted")
    write_assertions(drafts / ASSERTIONS_FILE, [a.model_copy(update={"status": "draft"})
                                                for a in load_exam(drafts).assertions])
    broken = _copy_exam(repo, "broken")
    (broken / EXAM_FILE).write_text((broken / EXAM_FILE).read_text().replace("[runner]", "[runner\n"))
    toothless = _copy_exam(repo, "toothless")
    (toothless / VERIFY_FILE).unlink()
    write_assertions(toothless / ASSERTIONS_FILE, [a for a in load_exam(toothless).assertions
                                                   if a.tier in ("profile", "judged")])
    with pytest.raises(BundleError) as refused:
        exam_bundle(repo, find_exams(repo))
    problems = dict(refused.value.problems)
    assert sorted(problems) == sorted(str(p) for p in (broken, drafts, toothless))
    assert "not valid TOML" in problems[str(broken)] and "fix it, then load again" in problems[str(broken)]
    assert f"assay review {drafts}" in problems[str(drafts)]
    assert "no replay could fail it" in problems[str(toothless)]


def test_an_exam_outside_the_repository_or_none_at_all_is_refused(repo: Path, tmp_path: Path) -> None:
    elsewhere = Path(shutil.copytree(repo / EXAM_DIR, tmp_path / "loose" / SLUG))
    with pytest.raises(BundleError, match="replays in the repository that holds it"):
        exam_bundle(repo, [elsewhere])
    with pytest.raises(BundleError, match="no exam to load"):
        exam_bundle(repo, [])


def test_find_exams_by_slug_or_path(repo: Path) -> None:
    other = _copy_exam(repo, "another")
    (repo / ".assay" / "exams" / "not-an-exam").mkdir()
    first = repo / EXAM_DIR
    assert find_exams(repo) == [other, first]
    assert find_exams(repo, [SLUG]) == [first]
    assert find_exams(repo, [str(other), "another", EXAM_DIR]) == [other, repo / EXAM_DIR]
    with pytest.raises(NotFoundError) as unknown:
        find_exams(repo, ["half-cents"])
    assert "half-cent" in unknown.value.nearest and unknown.value.known == ["another", SLUG]
    assert find_exams(repo / "nowhere") == []


def test_a_band_gates_once_calibration_set_its_centre(repo: Path) -> None:
    exam = load_exam(repo / EXAM_DIR)
    band = next(a for a in exam.assertions if a.check == "band")
    criteria = exam_bundle(repo, [repo / EXAM_DIR]).teams[0].suites[0].criteria["exam_gate"]
    assert band.key in criteria.ignore and band.key not in criteria.required
    calibrated = {**band.params, "center": 6.0, "spread": 0.5}
    write_assertions(repo / EXAM_DIR / ASSERTIONS_FILE,
                     [a.model_copy(update={"params": calibrated}) if a.key == band.key else a for a in exam.assertions])
    criteria = exam_bundle(repo, [repo / EXAM_DIR]).teams[0].suites[0].criteria["exam_gate"]
    assert band.key in criteria.required and band.key not in criteria.ignore
