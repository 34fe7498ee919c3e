"""Call sets: files of recorded calls, replayed by the ``recorded`` runner as evidence.

A call set is a JSON Lines file (UTF-8), one recorded call per line; blank lines are ignored::

    {"call_id": "call-0001", "case": "no-heat-elderly-caller",
     "started_at": "2026-11-20T15:04:05Z", "duration_ms": 84210, "cost_usd": 0.231,
     "transcript": [{"role": "agent", "text": "Northside Heating, this is Sam.", "t": 0.0},
                    {"role": "caller", "text": "My furnace stopped overnight.", "t": 2.1}],
     "tool_calls": [{"name": "check_service_area", "arguments": {"zip": "60614"},
                     "result": {"in_area": false}, "is_error": false, "t": 14.2}],
     "evaluations": [{"name": "handles_out_of_area", "evaluator": "hamming:guardrail",
                      "verdict": "pass", "score": null, "scale_min": null, "scale_max": null,
                      "rationale": "Told the caller plainly and offered a referral."}],
     "provider": "hamming", "provider_ref": "tcr_123", "provider_payload": {"...": "..."}}

Fields (only ``call_id`` and ``case`` are required; any other may be omitted or null):

- ``call_id`` (string): unique within the file; becomes the case run's ``source_ref``.
- ``case`` (string): the ``case_key`` of one of the run's cases. A case with no line gets one ERROR
  case run saying so, so a gap in the recording is never read as a pass.
- ``started_at`` (string): ISO 8601 with a UTC offset (``Z`` or ``+02:00``).
- ``duration_ms``, ``cost_usd`` (numbers >= 0).
- ``transcript`` (list of turns): ``role`` is ``caller``, ``agent`` or ``system``; ``text`` a string;
  ``t`` (optional) seconds from the start. Other keys in a turn are ignored.
- ``tool_calls`` (list): ``name`` (required), ``arguments`` (object, default ``{}``), ``result`` (any
  JSON value), ``is_error`` (boolean, default false), ``t`` (seconds).
- ``evaluations`` (list): the vendor's own judgments, kept as evidence on the vendor's scale:
  ``name`` and ``evaluator`` (``<vendor>:<what>``, such as ``hamming:guardrail``) are required;
  ``verdict`` is ``pass``, ``fail``, ``error``, ``unknown`` or null; ``score``, ``scale_min``,
  ``scale_max`` are numbers; ``rationale`` a string; ``raw`` the vendor's object as received.
- ``provider``, ``provider_ref`` (strings): who recorded the call and their id for it.
- ``provider_payload`` (object): the vendor's record of the call; secrets in it (and in ``raw``) are
  redacted before anything is stored.
- ``error`` (string): the call failed on the vendor's side; its case run has status ``error`` with this
  message (an ERROR, never a FAIL).

Any other top-level, tool-call or evaluation field is refused, and so is the whole file if one line is
bad: the error names the file, each bad line, the field and what is allowed.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from assay.core.evidence import TURN_ROLES, VERDICTS, case_run_schema, evaluation_schema
from assay.core.redact import SUSPECT_PATTERN, redact

from .callset_check import EVALUATION_FIELDS, FIELDS, TIMESTAMP_PATTERN, TOOL_FIELDS, CallSetError, explain

if TYPE_CHECKING:
    import pyarrow as pa


def file_sha256(path: Path) -> str:
    """sha256 hex of a file's bytes."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


@dataclass(frozen=True)
class CallSet:
    """A validated call set as report-ready Arrow tables."""

    case_runs: "pa.Table"
    """One row per call, in file order, matching :func:`case_run_schema`."""
    evaluations: "pa.Table"
    """Every call's evaluations, in file order, matching :func:`evaluation_schema`."""
    evaluation_offsets: list[int]
    """The evaluations of case run ``i`` are rows ``evaluation_offsets[i]:evaluation_offsets[i + 1]``."""
    providers: list[str]
    """The distinct ``provider`` values of the file."""


def _list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


_NUM = "['BIGINT', 'UBIGINT', 'HUGEINT', 'DOUBLE']"

# Detection only: `bad` is true for a row that a rule of callset_check refuses; callset_check then says
# what is wrong. Every JSON function re-parses its argument, so each line is parsed once into top-level
# pieces (a JSON null becomes SQL NULL) and the rules run on the small pieces. `from_json` into a list
# type yields NULL for a value that is not a list, which is how `listed` spots one.
_MACROS = f"""
CREATE OR REPLACE TEMP MACRO opt_t(v, types) AS (v IS NULL OR list_contains(types, json_type(v)));
CREATE OR REPLACE TEMP MACRO req_str(v) AS coalesce(json_type(v) = 'VARCHAR' AND length(v ->> '$') > 0, false);
CREATE OR REPLACE TEMP MACRO keys_in(keys, allowed) AS
  (len(list_filter(keys, lambda k: NOT list_contains(allowed, k))) = 0);
CREATE OR REPLACE TEMP MACRO num_ok(v) AS (opt_t(v, {_NUM}) AND coalesce(TRY_CAST(v AS DOUBLE) >= 0, true));
CREATE OR REPLACE TEMP MACRO coalesce_len(l) AS coalesce(len(l), 0);
CREATE OR REPLACE TEMP MACRO listed(raw, typed) AS (raw IS NULL OR typed IS NOT NULL);
"""

_TOP = json.dumps({field: "JSON" for field in FIELDS})
_TURNS = json.dumps([{"role": "VARCHAR", "text": "JSON", "t": "JSON"}])
_TOOLS = json.dumps([{field: "JSON" for field in TOOL_FIELDS}])
_EVALS = json.dumps([{field: "JSON" for field in EVALUATION_FIELDS}])

_QUERY = f"""
WITH src AS (
  SELECT json_keys(json) AS keys, from_json(json, '{_TOP}') AS r FROM read_ndjson_objects(?)
), p AS (
  SELECT keys, r, from_json(r.transcript, '{_TURNS}') AS turns,
    from_json(r.tool_calls, '{_TOOLS}') AS tools, json_keys(r.tool_calls, '$[*]') AS tool_keys,
    from_json(r.evaluations, '{_EVALS}') AS evals, json_keys(r.evaluations, '$[*]') AS eval_keys
  FROM src
)
SELECT
  NOT coalesce(keys_in(keys, {_list(FIELDS)}) AND req_str(r.call_id) AND req_str(r."case")
    AND opt_t(r.started_at, ['VARCHAR']) AND (r.started_at IS NULL OR (
      regexp_full_match(r.started_at ->> '$', '{TIMESTAMP_PATTERN}')
      AND TRY_CAST(r.started_at ->> '$' AS TIMESTAMPTZ) IS NOT NULL))
    AND num_ok(r.duration_ms) AND num_ok(r.cost_usd)
    AND opt_t(r.provider, ['VARCHAR']) AND opt_t(r.provider_ref, ['VARCHAR']) AND opt_t(r.error, ['VARCHAR'])
    AND opt_t(r.provider_payload, ['OBJECT'])
    AND listed(r.transcript, turns) AND listed(r.tool_calls, tools) AND listed(r.evaluations, evals)
    AND coalesce_len(list_filter(turns, lambda x: NOT coalesce(list_contains({_list(TURN_ROLES)}, x.role)
        AND json_type(x.text) = 'VARCHAR' AND opt_t(x.t, {_NUM}), false))) = 0
    AND coalesce_len(list_filter(tools, lambda x: NOT coalesce(req_str(x.name) AND opt_t(x.arguments, ['OBJECT'])
        AND opt_t(x.is_error, ['BOOLEAN']) AND opt_t(x.t, {_NUM}), false))) = 0
    AND coalesce_len(list_filter(tool_keys, lambda ks: NOT keys_in(ks, {_list(TOOL_FIELDS)}))) = 0
    AND coalesce_len(list_filter(evals, lambda x: NOT coalesce(req_str(x.name) AND req_str(x.evaluator)
        AND opt_t(x.verdict, ['VARCHAR']) AND coalesce(list_contains({_list(VERDICTS)}, x.verdict ->> '$'), true)
        AND opt_t(x.score, {_NUM}) AND opt_t(x.scale_min, {_NUM}) AND opt_t(x.scale_max, {_NUM})
        AND opt_t(x.rationale, ['VARCHAR']) AND opt_t(x.raw, ['OBJECT']), false))) = 0
    AND coalesce_len(list_filter(eval_keys, lambda ks: NOT keys_in(ks, {_list(EVALUATION_FIELDS)}))) = 0, false) AS bad,
  r.call_id ->> '$' AS call_id,
  r."case" ->> '$' AS case_key,
  r.error ->> '$' AS error,
  coalesce(list_transform(turns, lambda x: {{'role': x.role, 'text': x.text ->> '$', 't': TRY_CAST(x.t AS DOUBLE)}}),
    []::STRUCT(role VARCHAR, text VARCHAR, t DOUBLE)[]) AS transcript,
  coalesce(list_transform(tools, lambda x: {{'name': x.name ->> '$',
    'arguments': coalesce(CAST(x.arguments AS VARCHAR), '{{}}'), 'result': CAST(x.result AS VARCHAR),
    'is_error': coalesce(TRY_CAST(x.is_error AS BOOLEAN), false), 't': TRY_CAST(x.t AS DOUBLE)}}),
    []::STRUCT(name VARCHAR, arguments VARCHAR, result VARCHAR, is_error BOOLEAN, t DOUBLE)[]) AS tool_calls,
  r.provider_ref ->> '$' AS provider_ref,
  CAST(r.provider_payload AS VARCHAR) AS provider_payload,
  TRY_CAST(r.cost_usd AS DOUBLE) AS cost_usd,
  TRY_CAST(r.duration_ms AS DOUBLE) AS duration_ms,
  TRY_CAST(r.started_at ->> '$' AS TIMESTAMPTZ) AS started_at,
  r.provider ->> '$' AS provider,
  list_transform(evals, lambda x: {{'name': x.name ->> '$', 'evaluator': x.evaluator ->> '$',
    'verdict': x.verdict ->> '$', 'score': TRY_CAST(x.score AS DOUBLE),
    'scale_min': TRY_CAST(x.scale_min AS DOUBLE), 'scale_max': TRY_CAST(x.scale_max AS DOUBLE),
    'rationale': x.rationale ->> '$', 'raw': CAST(x.raw AS VARCHAR)}}) AS evaluations
FROM p
"""


def _scan(path: Path) -> "pa.Table":
    """Parse and check the whole file in DuckDB (parallel, one parse per line); rows in file order.

    Raises ``duckdb.Error`` when DuckDB cannot read the file (malformed JSON, a value it cannot cast).
    """
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        con.execute("SET TimeZone = 'UTC'; SET preserve_insertion_order = true;")
        con.execute(_MACROS)
        with _globless(path) as readable:
            return con.sql(_QUERY, params=[str(readable)]).to_arrow_table()
    finally:
        con.close()


@contextmanager
def _globless(path: Path) -> Iterator[Path]:
    """DuckDB expands ``*``, ``?`` and ``[`` in a path it reads; give it a plain name linked to the file."""
    if not any(ch in str(path) for ch in "*?["):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="assay-callset-") as tmp:
        link = Path(tmp) / "calls.jsonl"
        link.symlink_to(path)
        yield link


def _redacted(column: "pa.ChunkedArray | pa.Array") -> "pa.Array":
    """Redact JSON-text values; only rows whose text could hold a secret are parsed."""
    import pyarrow as pa
    import pyarrow.compute as pc

    suspects = pc.fill_null(pc.match_substring_regex(column, SUSPECT_PATTERN, ignore_case=True), False)
    values = column.to_pylist() if pc.any(suspects).as_py() else None
    if values is None:
        return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    for i in pc.indices_nonzero(suspects).to_pylist():
        values[i] = json.dumps(redact(json.loads(values[i])), ensure_ascii=False, separators=(",", ":"))
    return pa.array(values, pa.string())


def load_call_set(path: Path, cases: Mapping[str, str]) -> CallSet:
    """Read, validate and convert a whole call set; ``cases`` maps case_key to case_id.

    Raises :class:`CallSetError` (a ``RunnerError``) naming every bad line before anything is returned.
    """
    import duckdb
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        raw = _scan(path)
    except duckdb.Error as exc:
        _refuse(path, cases, fallback=f"could not be read: {exc}")
    keys = pa.array(sorted(cases), pa.string())
    if raw.num_rows and (
        pc.any(raw["bad"]).as_py()
        or pc.count_distinct(raw["call_id"]).as_py() != raw.num_rows
        or not pc.all(pc.is_in(raw["case_key"], value_set=keys)).as_py()
    ):
        _refuse(path, cases, fallback="a line does not match the call-set format")

    schema, eval_schema = case_run_schema(), evaluation_schema()
    case_id = pc.take(pa.array([cases[k] for k in keys.to_pylist()], pa.string()), pc.index_in(raw["case_key"], keys))
    columns = {
        "case_id": case_id,
        "source_ref": raw["call_id"],
        "status": pc.if_else(pc.is_null(raw["error"]), "executed", "error"),
        "error": raw["error"],
        "transcript": raw["transcript"].cast(schema.field("transcript").type),
        "tool_calls": raw["tool_calls"].cast(schema.field("tool_calls").type),
        "artefact": pa.nulls(raw.num_rows, pa.string()),
        "provider_ref": raw["provider_ref"],
        "provider_payload": _redacted(raw["provider_payload"]),
        "cost_usd": raw["cost_usd"],
        "duration_ms": raw["duration_ms"],
        "started_at": raw["started_at"].cast(schema.field("started_at").type),
    }
    case_runs = pa.Table.from_arrays([columns[f.name] for f in schema], schema=schema)

    evals = raw["evaluations"].combine_chunks()
    flat = pc.list_flatten(evals)
    parents = pc.list_parent_indices(evals)
    offsets = pc.cumulative_sum(pc.fill_null(evals.value_lengths(), 0)).to_pylist()
    eval_columns = {
        "case_id": pc.take(case_id, parents),
        "source_ref": pc.take(raw["call_id"], parents),
        **{f.name: flat.field(f.name) for f in eval_schema if f.name not in ("case_id", "source_ref", "raw")},
        "raw": _redacted(flat.field("raw")),
    }
    evaluations = pa.Table.from_arrays(
        [eval_columns[f.name].cast(f.type) for f in eval_schema], schema=eval_schema
    )
    providers = sorted(p for p in pc.unique(raw["provider"]).to_pylist() if p is not None)
    return CallSet(case_runs, evaluations, [0, *offsets], providers)


def _refuse(path: Path, cases: Mapping[str, str], fallback: str) -> NoReturn:
    problems, more = explain(path, set(cases))
    raise CallSetError(str(path), problems or [(None, "", fallback)], more)
