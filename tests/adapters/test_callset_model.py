"""The call-set model is defined once: its SQL form and its Python form judge every value alike.

The property test walks the declared fields, so a new field (or a new kind) is covered without a
new test: every field of every model gets every value of a pool of JSON values (plus its own allowed
values), and the bulk query and :func:`check_line` must agree on each line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.adapters.runners.callset import load_call_set
from assay.core.callset import EVALUATION, LINE, TOOL_CALL, TURN, check_line, scan_sql
from assay.core.callset_kinds import CASE, ENUM, Field, Model
from assay.core.evidence import case_run_schema, evaluation_schema

CASES = ["water-heater", "no-heat"]

POOL: list[Any] = [
    None, True, False, 0, 1, -1, 2.5, -0.5, -0.0, 1e300, 2**63 + 1, 2**64 + 1, -(2**63) - 1,
    "", "x", " ", "None", "null", "true", "1", "{}", "'caller'", "Caller", "no-heat ",
    "2026-11-20T15:04:05Z", "2026-11-20T15:04:05z", "2026-11-20 15:04:05+02:00", "2026-11-20T15:04+02",
    "2026-11-20T15:04:05.123456789-0530", "2026-11-20T15:04:05.1234567+00:00", "2026-11-20T15:04:05",
    "2026-02-30T15:04:05Z", "2026-11-20T24:00:00Z", "2026-11-20T15:60:00Z", "2026-11-20T15:04:05+24:00",
    "2026-11-20T15:04:05+23:59", "\u0662\u0660\u0662\u0666-11-20T15:04:05Z", "2026-11-20T15:04:05Z ", "yesterday",
    "0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59-23:59", "2026-11-20T15:04:05+12:60",
    "2026-11-20T15:04:05+25:00", "2026-11-20T24:30:00Z", "2026-11-20t15:04:05Z", "2026-11-20T15:04:05.Z",
    "2026-11-20T15:04:05+00", "2026-11-20T15:04:60Z", "2024-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
    {}, {"a": 1}, [], [1], ["x"], [None], [{}], [[]],
]  # fmt: skip
"""JSON values of every type, and strings near each kind's edges (timestamps most of all)."""


def _candidates(f: Field) -> list[Any]:
    return [*POOL, *f.values, *(CASES if f.kind is CASE else ())]


def _good(f: Field) -> Any:
    """A value the field accepts, found by its own Python check."""
    return next(v for v in _candidates(f) if v is not None and not f.kind.check(f, v, True, CASES))


def _valid(model: Model) -> dict[str, Any]:
    return {f.name: _good(f) for f in model.fields if f.required}


def _variants(model: Model) -> list[dict[str, Any]]:
    """Objects of ``model`` that differ from a valid one in one field: each candidate value, or absent."""
    base = _valid(model)
    objects = [base, {**base, "unknown_key": 1}]
    for f in model.fields:
        objects.append({k: v for k, v in base.items() if k != f.name})
        objects += [{**base, f.name: value} for value in _candidates(f)]
        if f.model:
            objects += [{**base, f.name: [item]} for item in _variants(f.model)]
            objects += [{**base, f.name: [value]} for value in POOL]
            objects.append({**base, f.name: [_valid(f.model), _valid(f.model)]})
    return objects


def _bulk_verdicts(tmp_path: Path, lines: list[dict[str, Any]]) -> list[bool]:
    import duckdb

    path = tmp_path / "lines.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET TimeZone = 'UTC'; SET preserve_insertion_order = true;")
        return con.sql(scan_sql(), params={"path": str(path), "cases": CASES}).to_arrow_table()["bad"].to_pylist()
    finally:
        con.close()


def test_the_bulk_query_and_the_line_check_judge_every_field_alike(tmp_path: Path) -> None:
    lines = _variants(LINE)  # a shared call_id is fine: uniqueness is a rule across lines, not of a line
    assert len(lines) > 1000
    bulk = _bulk_verdicts(tmp_path, lines)
    assert len(bulk) == len(lines)
    disagree = [(bad, check_line(line, CASES), line) for line, bad in zip(lines, bulk, strict=True)
                if bad != bool(check_line(line, CASES))]  # fmt: skip
    assert not disagree, "\n".join(f"bulk bad={bad}, line check {problems}: {json.dumps(line)}"
                                   for bad, problems, line in disagree[:10])  # fmt: skip
    assert sum(bulk) > len(bulk) / 2 and not all(bulk)  # the pool exercises both verdicts


def test_every_field_is_exercised_with_a_good_and_a_bad_value() -> None:
    def walk(model: Model) -> list[Field]:
        return [g for f in model.fields for g in (f, *(walk(f.model) if f.model else ()))]

    for f in walk(LINE):
        judged = [bool(f.kind.check(f, v, True, CASES)) for v in _candidates(f) if v is not None]
        assert False in judged, f"no good value for {f.name} in the pool"
        assert True in judged or f.kind.name == "json", f"no bad value for {f.name} in the pool"


def test_the_sub_models_are_the_columns_the_evidence_schema_stores() -> None:
    schema = case_run_schema()
    assert TURN.names == tuple(schema.field("transcript").type.value_type.names)
    assert TOOL_CALL.names == tuple(schema.field("tool_calls").type.value_type.names)
    derived = ("case_id", "source_ref", "met", "value")  # met and value: read by the vendor mapping, never given
    assert EVALUATION.names == tuple(n for n in evaluation_schema().names if n not in derived)
    stored = set(schema.names) | {"call_id", "case", "evaluations", "provider"}
    assert set(LINE.names) <= stored


def test_check_line_names_the_field_path_and_what_is_allowed() -> None:
    assert check_line({"call_id": "c1", "case": "no-heat"}, CASES) == []
    line = {"call_id": "c1", "case": "no-heat", "tool_calls": [{"name": "x"}, {"name": "y", "args": {}}]}
    assert check_line(line, CASES) == [
        ("tool_calls[1].args", "unknown field; allowed fields are name, arguments, result, is_error, t")]
    assert check_line({"call_id": "", "case": "no-heat", "cost_usd": -1}, CASES) == [
        ("call_id", "required: a non-empty string, got a string"),
        ("cost_usd", "expected a number >= 0 or null, got -1")]
    assert check_line(["c1"], CASES) == [("", "expected a JSON object (one call per line), got a list")]


def test_an_enum_value_that_reads_as_json_text_is_refused_at_declaration() -> None:
    with pytest.raises(ValueError, match="is JSON text"):
        Field("level", ENUM, "a level", values=("low", "1"))


def test_rows_keep_the_file_order_when_the_file_is_read_in_parallel(tmp_path: Path) -> None:
    """A rule on a long constant list (the run's cases) may be planned as a join, which reorders rows."""
    path, cases = tmp_path / "big.jsonl", [f"case-{i:02d}" for i in range(20)]
    pad = {"note": "x" * 1000}
    with path.open("w", encoding="utf-8") as handle:
        for i in range(20_000):
            handle.write(json.dumps({"call_id": f"c{i:06d}", "case": cases[i % 20], "provider_payload": pad}) + "\n")
    calls = load_call_set(path, {k: f"cid-{k}" for k in cases})
    refs = calls.case_runs["source_ref"].to_pylist()
    assert refs == [f"c{i:06d}" for i in range(20_000)]


def test_the_rules_across_fields_judge_alike_in_both_forms(tmp_path: Path) -> None:
    """A score on its scale, a scale that runs upwards and names unique within a call: rules of more than
    one value, which the one-field variants above never break."""
    numbers: list[Any] = [None, -1, 0, 5, 10, 10.0, 2**63 + 1, 9.223372036854776e18, 1e300, "5"]
    lines = [{"call_id": "c", "case": "no-heat", "evaluations": [
        {"name": "g", "evaluator": "v:g", "score": score, "scale_min": low, "scale_max": high}]}
        for score in numbers for low in numbers for high in numbers]  # fmt: skip
    evaluation = {"name": "g", "evaluator": "v:g"}
    lines += [{"call_id": "c", "case": "no-heat", "evaluations": evaluations} for evaluations in (
        [evaluation, evaluation], [evaluation, {**evaluation, "evaluator": "v:h"}], [evaluation, {**evaluation, "name": "h"}],
        [evaluation, {"name": 1, "evaluator": "v:g"}, {"name": "1", "evaluator": "v:g"}], [evaluation, "g", evaluation],
    )]  # fmt: skip
    bulk = _bulk_verdicts(tmp_path, lines)
    disagree = [(bad, check_line(line, CASES), line) for line, bad in zip(lines, bulk, strict=True)
                if bad != bool(check_line(line, CASES))]  # fmt: skip
    assert not disagree, "\n".join(f"bulk bad={bad}, line check {problems}: {json.dumps(line)}"
                                   for bad, problems, line in disagree[:10])  # fmt: skip
    off_scale = {"name": "g", "evaluator": "v:g", "score": 11, "scale_min": 0, "scale_max": 10}
    assert check_line({"call_id": "c", "case": "no-heat", "evaluations": [off_scale]}, CASES) == [
        ("evaluations[0].score", "11 is outside the scale 0..10; give the score on the vendor's scale, or the scale "
                                 "the vendor scored on")]
    assert sum(bulk) > 100 and len(lines) - sum(bulk) > 100  # both verdicts, many times over
