"""Untrusted input: caps at their exact boundary, read from the settings, the same rules in YAML, JSON and call sets."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from factories import CALLS, base, case, write
from pydantic import ValidationError

from assay.core.bundle import read_bundle
from assay.core.bundle_input import InputLimits, InputProblem, hostile_values, iter_lines, read_capped
from assay.core.callset import check_line, explain
from assay.core.errors import BundleError
from assay.core.settings import Settings


def _nested(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = {"d": value}
    return value


def test_the_caps_are_settings_with_defaults_and_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_MAX_BUNDLE_BYTES", "1234")
    monkeypatch.setenv("ASSAY_MAX_NESTING", "20")
    limits = InputLimits.from_settings()
    assert (limits.max_bundle_bytes, limits.max_nesting) == (1234, 20)
    assert limits.max_call_bytes == Settings.model_fields["max_call_bytes"].default
    with pytest.raises(ValidationError):  # longer than the runner's bulk reader takes
        Settings(max_call_bytes=17 * 2**20)


@pytest.mark.parametrize("name", ["bundle.yaml", "bundle.json"])
def test_a_bundle_exactly_at_the_cap_loads_and_one_byte_more_is_refused_naming_the_setting(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, base(), name)
    size = path.stat().st_size
    monkeypatch.setenv("ASSAY_MAX_BUNDLE_BYTES", str(size))
    assert read_bundle(path).teams[0].id == "acme"
    monkeypatch.setenv("ASSAY_MAX_BUNDLE_BYTES", str(size - 1))
    with pytest.raises(BundleError) as info:
        read_bundle(path)
    assert str(path) in str(info.value) and f"cap of {size - 1:,} bytes" in str(info.value)
    assert "ASSAY_MAX_BUNDLE_BYTES" in str(info.value)


def test_read_capped_reads_at_most_one_byte_past_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"x" * 10_000)
    asked: list[int] = []
    real_open = Path.open

    def spy(self: Path, *args: Any, **kwargs: Any) -> Any:
        handle = real_open(self, *args, **kwargs)
        read = handle.read
        handle.read = lambda n=-1: (asked.append(n), read(n))[1]  # type: ignore[method-assign]
        return handle

    monkeypatch.setattr(Path, "open", spy)
    with pytest.raises(InputProblem, match="SETTING"):
        read_capped(path, 100, "SETTING")
    assert asked == [101]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_device_and_a_fifo_are_refused_before_they_are_opened(tmp_path: Path) -> None:
    link = tmp_path / "zero.yaml"
    link.symlink_to("/dev/zero")
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    for path, kind in ((link, "a device"), (fifo, "a FIFO")):
        with pytest.raises(BundleError, match=f"is {kind}, not a regular file"):
            read_bundle(path)  # a FIFO opened for reading would block here for ever


@pytest.mark.parametrize("name", ["bundle.yaml", "bundle.json"])
def test_nesting_is_capped_at_the_same_depth_in_yaml_and_json(tmp_path: Path, name: str) -> None:
    limits = InputLimits(max_nesting=20)
    doc = base()
    # The world sits at depth 7 (bundle, teams, team, cases, case, situation, world); each level adds one.
    case(doc)["situation"]["world"] = _nested(14)
    assert read_bundle(write(tmp_path, doc, name), limits).teams[0].id == "acme"
    case(doc)["situation"]["world"] = _nested(15)
    with pytest.raises(BundleError) as info:
        read_bundle(write(tmp_path, doc, name), limits)
    assert "nested deeper than the cap of 20 levels" in str(info.value)
    assert "ASSAY_MAX_NESTING" in str(info.value) and str(tmp_path) in str(info.value)


def test_an_anchor_without_an_alias_is_fine_and_any_alias_is_refused_with_its_line(tmp_path: Path) -> None:
    text = yaml.safe_dump(base(), sort_keys=False)
    anchored = text.replace("caller: Dana, homeowner", "caller: &who Dana, homeowner")
    assert read_bundle(write(tmp_path, base()).parent / _put(tmp_path, anchored)).teams[0].id == "acme"
    aliased = anchored.replace("caller: Marcus, tenant", "caller: *who")
    with pytest.raises(BundleError) as info:
        read_bundle(tmp_path / _put(tmp_path, aliased))
    line = next(n for n, text in enumerate(aliased.splitlines(), 1) if "*who" in text)
    assert f"line {line}" in str(info.value) and "alias (*name) is not allowed" in str(info.value)


def _put(folder: Path, text: str) -> str:
    (folder / "bundle.yaml").write_text(text)
    return "bundle.yaml"


def test_hostile_values_name_the_path_inside_the_document() -> None:
    doc = {"a": [1.0, float("nan"), {"b\x00": 1}], "c": float("-inf"), "d": "x\x00"}
    found = dict(hostile_values(doc, 10))
    assert set(found) == {("a", 1), ("a", 2, "b\\0"), ("c",), ("d",)}
    assert "NaN" in found[("a", 1)] and "infinite" in found[("c",)] and "NUL" in found[("d",)]
    assert hostile_values(json.loads("[" * 200 + "]" * 200), 199) == [
        ((0,) * 199, "nested deeper than the cap of 199 levels; flatten it or raise ASSAY_MAX_NESTING")
    ]


def test_a_target_linked_inside_the_bundle_folder_is_fine(tmp_path: Path) -> None:
    doc = base()
    doc["teams"][0]["suites"][0]["target"] = {"config": "linked.json"}
    path = write(tmp_path, doc)
    (tmp_path / "linked.json").symlink_to(tmp_path / "configs" / "main.json")
    assert read_bundle(path).teams[0].suites[0].resolved_target.target["config"]["name"] == "Main line"


def test_iter_lines_caps_a_line_without_its_break_and_keeps_counting(tmp_path: Path) -> None:
    data = b"a" * 9 + b"\n" + b"b" * 10 + b"\n" + b"c" * 25 + b"\n" + b"tail"
    got = list(iter_lines(io.BytesIO(data), 10))
    assert got == [(1, b"a" * 9 + b"\n", 9), (2, b"b" * 10 + b"\n", 10), (3, None, 25), (4, b"tail", 4)]


def test_a_call_set_is_checked_at_load_by_the_runner_line_model(tmp_path: Path) -> None:
    bad = {**CALLS[0], "call_id": "3", "cost_usd": -1}
    assert check_line(bad, {"outside-area"}) == [("cost_usd", "expected a number >= 0 or null, got -1")]
    path = write(tmp_path, base())
    with (tmp_path / "calls" / "recorded.jsonl").open("a") as handle:
        handle.write(json.dumps(bad) + "\n")
    with pytest.raises(BundleError) as info:
        read_bundle(path)
    assert "teams[0].suites[1].target.call_set" in str(info.value)
    assert "line 3, cost_usd: expected a number >= 0 or null, got -1" in str(info.value)


_EVALUATION = {"name": "g", "evaluator": "vendor:g"}


@pytest.mark.parametrize(("evaluations", "field", "what"), [
    pytest.param([{**_EVALUATION, "score": 12, "scale_min": 0, "scale_max": 10}], "evaluations[0].score",
                 "12 is outside the scale 0..10; give the score on the vendor's scale", id="score-off-its-scale"),
    pytest.param([{**_EVALUATION, "scale_min": 5, "scale_max": 1}], "evaluations[0].scale_min",
                 "scale_min 5 is above scale_max 1; the scale runs from scale_min up to scale_max: swap them",
                 id="scale-reversed"),
    pytest.param([_EVALUATION, {**_EVALUATION, "evaluator": "vendor:h"}], "evaluations[1].name",
                 "'g' is already the name of evaluations[0]; names must be unique within a line's evaluations",
                 id="evaluation-name-twice"),
])  # fmt: skip
def test_a_call_set_fault_across_fields_is_refused_at_load_naming_file_line_call_and_field(
    tmp_path: Path, evaluations: list[dict[str, Any]], field: str, what: str
) -> None:
    """Refused by ``assay load``, not half-way through a run: the run would have reported the batches before it."""
    import sqlalchemy as sa

    from assay.storage.catalog import tables as t
    from assay.storage.catalog.engine import create_catalog_engine, migrate
    from assay.storage.catalog.load import load_bundle

    path = write(tmp_path, base())
    calls = tmp_path / "calls" / "recorded.jsonl"
    with calls.open("a") as handle:
        handle.write(json.dumps({**CALLS[0], "call_id": "call-7", "evaluations": evaluations}) + "\n")
    engine = create_catalog_engine(f"sqlite:///{tmp_path / 'catalog.db'}")
    migrate(engine)
    with pytest.raises(BundleError) as info:
        load_bundle(engine, path)
    message = str(info.value)
    assert str(calls.resolve()) in message and "teams[0].suites[1].target.call_set" in message, message
    assert f"line 3, {field}: {what}" in message and "(call 'call-7')" in message, message
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(t.teams)).scalar() == 0


@pytest.mark.parametrize(
    ("text", "field", "what"),
    [
        ('"cost_usd": 1e400', "cost_usd", "infinite"),
        ('"duration_ms": NaN', "duration_ms", "NaN"),
        ('"provider_payload": {"k": "a\\u0000b"}', "provider_payload.k", "NUL"),
    ],
)
def test_a_call_line_with_a_value_no_catalog_holds_is_refused_with_its_path(
    tmp_path: Path, text: str, field: str, what: str
) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_text('{"call_id": "1", "case": "a", ' + text + "}\n")
    problems, more = explain(path, {"a"})
    assert [(n, f) for n, f, _ in problems] == [(1, field)] and what in problems[0][2] and not more


def test_the_runner_bulk_check_refuses_an_infinite_amount(tmp_path: Path) -> None:
    from assay.adapters.runners.callset import CallSetError, load_call_set

    path = tmp_path / "calls.jsonl"
    path.write_text('{"call_id": "1", "case": "a", "duration_ms": 1e400}\n')
    with pytest.raises(CallSetError, match="line 1, duration_ms: the number is infinite"):
        load_call_set(path, {"a": "case-a"})


def _loop(folder: Path, name: str) -> Path:
    """``name`` in ``folder``: a link to a link that leads back to it."""
    (folder / f"{name}.other").symlink_to(name)
    (folder / name).unlink(missing_ok=True)
    (folder / name).symlink_to(f"{name}.other")
    return folder / name


def test_a_call_set_target_in_a_link_loop_is_refused_naming_the_path(tmp_path: Path) -> None:
    path = write(tmp_path, base())
    loop = _loop(tmp_path / "calls", "recorded.jsonl")
    with pytest.raises(BundleError) as info:
        read_bundle(path)
    message = str(info.value)
    assert "teams[0].suites[1].target.call_set" in message and str(loop) in message, message
    assert "a symbolic link that leads back to itself" in message and "point the link at a file" in message, message


@pytest.mark.parametrize("which", ["export", "out"])
def test_calls_import_refuses_a_link_loop_naming_the_path(tmp_path: Path, which: str) -> None:
    """Checked before the catalog is opened, so an unopened engine does."""
    import sqlalchemy as sa

    from assay.core.errors import CallExportError
    from assay.flows.calls_import import import_calls

    export, out = tmp_path / "export.json", tmp_path / "calls.jsonl"
    export.write_text("[]")
    loop = _loop(tmp_path, export.name if which == "export" else out.name)
    with pytest.raises(CallExportError) as info:
        import_calls(sa.create_engine("sqlite://"), "vapi", str(export), "acme/recorded", str(out))
    assert str(loop) in str(info.value) and "leads back to itself" in str(info.value), str(info.value)
    assert not out.exists() and not (tmp_path / "calls.jsonl.drafts.yaml").exists()
