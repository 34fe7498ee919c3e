"""The exam directory's files: TOML written by hand reads back equal, and bad files are refused by file and field."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from assay.core.errors import BundleError, SchemaVersionError
from assay.core.exam import (ExamAssertion, ExamEnvironment, ExamRunner, ExamSource, ExamSpec, ExamWorkspace,
                             load_exam, read_assertions, unreviewed, write_assertions, write_exam)  # fmt: skip
from assay.core.exam_checks import CHECK_TIERS
from assay.core.toml_write import toml_dumps

NASTY = [
    "", "plain", 'say "hi"', "back\\slash\\", "tab\there", "line\nbreak\r\n", '"""', "'''", "\x00nul", "\x1f\x7f",
    "emoji 🧪 and ü", "= [not] a # table", "trailing space ", "\\u0041 is not A", "\u2028separator", "\b\f",
]  # fmt: skip


@pytest.mark.parametrize("text", NASTY)
def test_nasty_strings_round_trip_as_values_and_keys(text: str) -> None:
    document = {"value": text, "list": [text, text], "table": {text or "empty": text}}
    assert tomllib.loads(toml_dumps(document)) == {**document, "table": {text or "empty": text}}


def test_every_supported_shape_round_trips() -> None:
    document = {
        "schema": "x", "n": -3, "big": 2**62, "f": 0.1, "tiny": 1e-300, "huge": 1.5e300, "whole": 2.0,
        "yes": True, "no": False, "empty": [], "mixed": [1, "a", 2.5, True], "nested": [[1, 2], ["a"]],
        "table": {"a": 1, "dotted.key": "v", "sub": {"deep": {"deeper": "x"}}, "empty": {}},
        "rows": [{"key": "a", "params": {"cmd": "pytest -q"}, "kids": [{"n": 1}, {"n": 2}]}, {"key": "b"}],
    }  # fmt: skip
    assert tomllib.loads(toml_dumps(document)) == document


def test_none_leaves_a_key_out_and_order_is_kept() -> None:
    text = toml_dumps({"b": 1, "gone": None, "a": 2})
    assert text == "b = 1\na = 2\n"


@pytest.mark.parametrize("bad,where", [
    ({"x": float("nan")}, "x"), ({"x": float("inf")}, "x"), ({"t": {"d": object()}}, "t.d"),
    ({"x": [1, {"a": 1}]}, "x"), ({"x": "\ud800"}, "x"), ({"x": [None]}, "x"),
])  # fmt: skip
def test_what_toml_cannot_hold_is_refused_naming_where(bad: dict, where: str) -> None:
    with pytest.raises(ValueError, match=rf"^{where}: "):
        toml_dumps(bad)


def _spec(**changes) -> ExamSpec:
    fields = dict(
        slug="fix-rounding", runner=ExamRunner(name="fake-agent", version="2.1.0"), model="model-a",
        workspace=ExamWorkspace(commit="a" * 40, patch="workspace.patch", untracked=("notes/todo.md",)),
        environment=ExamEnvironment(fingerprint="sha256:" + "0" * 64, parts={"os": "linux", "uv.lock": "sha256:1"}),
        source=ExamSource(session_id="s-1", harness="fake-agent", turns=7, cost_usd=0.42),
    )  # fmt: skip
    return ExamSpec(**{**fields, **changes})


def _assertions() -> list[ExamAssertion]:
    return [
        ExamAssertion(key="passes-pytest", tier="outcome", check="command_passes", params={"command": "pytest -q"},
                      evidence=("call c3: `pytest -q` exited 1", "call c9: `pytest -q` exited 0")),
        ExamAssertion(key="cap-turns", tier="trajectory", check="cap", params={"measure": "turns", "max": 14},
                      status="accepted"),
        ExamAssertion(key="judged", tier="judged", check="rubric", params={"text": 'does "it"\nwork?'}, note="n"),
    ]  # fmt: skip


def test_an_exam_directory_round_trips(tmp_path: Path) -> None:
    path = write_exam(tmp_path / "fix-rounding", _spec(), "Fix the rounding.\n", _assertions(), patch=b"diff\n",
                      verify="#!/usr/bin/env bash\nexit 0\n")  # fmt: skip
    exam = load_exam(path)
    assert exam.spec == _spec()
    assert exam.assertions == tuple(_assertions())
    assert exam.instruction == "Fix the rounding.\n"
    assert exam.patch_path == path / "workspace.patch" and exam.patch_path.read_bytes() == b"diff\n"
    assert exam.verify_path is not None and exam.verify_path.stat().st_mode & 0o111
    assert unreviewed(exam) == ["passes-pytest", "judged"]
    raw = tomllib.loads((path / "exam.toml").read_text())
    assert raw["schema"] == "assay.exam" and raw["revision"] == 1 and raw["workspace"]["commit"] == "a" * 40
    assert [p.name for p in tmp_path.iterdir()] == ["fix-rounding"]  # no temporary directory left behind


def test_write_exam_will_not_replace_a_directory_unless_forced(tmp_path: Path) -> None:
    path = write_exam(tmp_path / "fix-rounding", _spec(workspace=ExamWorkspace(commit="b" * 40)), "a", _assertions())
    with pytest.raises(FileExistsError):
        write_exam(path, _spec(workspace=ExamWorkspace(commit="b" * 40)), "b", _assertions())
    write_exam(path, _spec(workspace=ExamWorkspace(commit="b" * 40)), "b", _assertions()[:1], force=True)
    assert load_exam(path).instruction == "b\n" and len(load_exam(path).assertions) == 1


def _written(tmp_path: Path) -> Path:
    return write_exam(tmp_path / "fix-rounding", _spec(workspace=ExamWorkspace(commit="c" * 40)), "Ask", _assertions())


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("file,old,new,field,says", [
    ("exam.toml", 'commit = "' + "c" * 40, 'commit = "HEAD', "workspace.commit", "should match pattern"),
    ("exam.toml", 'slug = "fix-rounding"', 'slug = "Fix Rounding"', "slug", "not a valid identifier"),
    ("exam.toml", "[caps]", "[caps]\nmax_turn = 3", "caps.max_turn", "unknown field"),
    ("exam.toml", 'version = "2.1.0"', "version = 2", "runner.version", "valid string"),
    ("assertions.toml", 'tier = "judged"', 'tier = "outcome"', "assertion[2]", "belongs to tier 'judged'"),
    ("assertions.toml", 'check = "cap"', 'check = "limit"', "assertion[1].check", "'limit' is not allowed"),
    ("assertions.toml", 'measure = "turns"', 'measure = "tokens"', "assertion[1].params", "'measure'"),
    ("assertions.toml", 'max = 14', 'maximum = 14', "assertion[1].params", "'maximum' is not a parameter of cap"),
    ("assertions.toml", 'status = "accepted"', 'status = "done"', "assertion[1].status", "'done' is not allowed"),
    ("assertions.toml", 'key = "judged"', 'key = "cap-turns"', "assertion", "repeated: cap-turns"),
])  # fmt: skip
def test_a_bad_field_is_refused_naming_the_file_and_the_field(tmp_path: Path, file, old, new, field, says) -> None:
    path = _written(tmp_path)
    _edit(path / file, old, new)
    with pytest.raises(BundleError) as caught:
        load_exam(path)
    assert caught.value.file == str(path / file)
    assert any(where == field and says in what for where, what in caught.value.problems), caught.value.problems


def test_missing_files_and_wrong_versions_are_refused(tmp_path: Path) -> None:
    path = _written(tmp_path)
    _edit(path / "assertions.toml", "revision = 1", "revision = 2")
    with pytest.raises(SchemaVersionError, match="revision"):
        load_exam(path)
    _edit(path / "assertions.toml", "revision = 2", "revision = 1")
    _edit(path / "exam.toml", 'schema = "assay.exam"', 'schema = "assay.bundle/v1"')
    with pytest.raises(BundleError, match="schema = 'assay.exam'"):
        load_exam(path)
    _edit(path / "exam.toml", 'schema = "assay.bundle/v1"', 'schema = "assay.exam"\npatch = "x"')
    with pytest.raises(BundleError, match="not valid TOML|unknown field"):
        load_exam(path)
    _edit(path / "exam.toml", 'schema = "assay.exam"\npatch = "x"', 'schema = "assay.exam"')
    (path / "instruction.md").unlink()
    with pytest.raises(BundleError, match="instruction.md: the file is missing"):
        load_exam(path)
    with pytest.raises(BundleError, match="no exam directory"):
        load_exam(tmp_path / "nowhere")


def test_a_patch_named_but_absent_is_refused(tmp_path: Path) -> None:
    path = write_exam(tmp_path / "fix-rounding", _spec(), "Ask", _assertions(), patch=b"x")
    (path / "workspace.patch").unlink()
    with pytest.raises(BundleError, match="workspace.patch: names 'workspace.patch', which is not in the exam"):
        load_exam(path)


@pytest.mark.parametrize("check", sorted(CHECK_TIERS))
def test_each_check_lives_in_exactly_one_tier(check: str) -> None:
    params = {"command_passes": {"command": "make test"}, "verify": {}, "file_changed": {"path": "a.py"},
              "file_contains": {"path": "a.py", "text": "x"}, "files_within": {"allow": ["src/**"]},
              "tool_used": {"tool": "edit"}, "tool_not_used": {"tool": "web"},
              "cap": {"measure": "cost_usd", "max": 1.5}, "band": {"measure": "turns", "k": 3},
              "profile": {"measure": "tool_mix"}, "rubric": {"text": "ok"}}[check]  # fmt: skip
    for tier in ("outcome", "trajectory", "profile", "judged"):
        if tier == CHECK_TIERS[check]:
            assert ExamAssertion(key="k", tier=tier, check=check, params=params).tier == tier
        else:
            with pytest.raises(ValueError, match=f"belongs to tier '{CHECK_TIERS[check]}'"):
                ExamAssertion(key="k", tier=tier, check=check, params=params)


def test_params_are_normalised_and_assertions_rewrite_atomically(tmp_path: Path) -> None:
    band = ExamAssertion(key="band-turns", tier="trajectory", check="band", params={"measure": "turns", "k": 3})
    assert band.params == {"measure": "turns", "k": 3.0}
    path = _written(tmp_path) / "assertions.toml"
    write_assertions(path, [band])
    assert read_assertions(path).assertion == (band,)
    assert sorted(p.name for p in path.parent.iterdir()) == ["assertions.toml", "exam.toml", "instruction.md"]
