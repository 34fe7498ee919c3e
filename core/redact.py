"""Secrets out of the record: one redaction pass, applied wherever data enters it.

Evidence, case content and compiled configs live forever in the catalog and the lake, so anything
that looks like a credential is replaced by ``"[redacted]"`` on the way in:

- :func:`redact` copies a JSON value: a value under a secret key (:func:`~assay.core.secrets.is_secret_key`:
  ``accessToken``, ``client_secret``, ``x-api-key``, ...) is replaced whole, whatever it is (``null``
  stays ``null``); every other string goes through :func:`redact_text`.
- :func:`redact_text` replaces only the secret spans inside free text (:data:`~assay.core.secrets.TEXT_RULES`):
  ``"sent Authorization: Bearer eyJ..."`` becomes ``"sent Authorization: Bearer [redacted]"``.
- :func:`redact_report` applies both to every string field of a runner's report (JSON text parsed,
  so a payload's keys count at any depth); the ledger calls it before anything is written. Loading
  applies them to every name, title, description and content of a bundle (a key cannot be rewritten,
  so one that looks like a credential is refused), ``assay calls import`` to the calls it writes, and
  judging to the judge's reasons.
- :func:`mask_url` is for printing: a URL with its password replaced by ``***``.

The rules are deliberately broad: losing a harmless value costs less than keeping a key. Bulk
callers that hold payloads as JSON text skip the parse for most rows with :data:`SUSPECT_PATTERN`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .secrets import (
    REDACTED, SECRET_KEYS, SECRET_WORDS, SUSPECT_PATTERN, TEXT_RULES, URL_PASSWORD, is_secret_key,
)  # fmt: skip

if TYPE_CHECKING:
    import pyarrow as pa

    from .evidence import Report

_SUSPECT = re.compile(SUSPECT_PATTERN, re.IGNORECASE)


def redact_text(text: str) -> str:
    """``text`` with every secret span replaced by ``"[redacted]"`` and the rest kept."""
    return redact_spans(text)[0]


def redact_spans(text: str) -> tuple[str, list[str]]:
    """``text`` redacted as :func:`redact_text` does, and the name of the rule behind each span it replaced
    (for a report of what was redacted that never shows the secret)."""
    lower = text.lower()
    fired: list[str] = []
    for rule in TEXT_RULES:
        if not any(t in lower for t in rule.triggers):
            continue

        def replace(match: re.Match[str], rule=rule) -> str:  # noqa: ANN001 - binds the loop's rule
            new = rule.replacement(match) if callable(rule.replacement) else match.expand(rule.replacement)
            if new != match.group(0):
                fired.append(rule.name)
            return new

        text = rule.pattern.sub(replace, text)
    return text, fired


def redact(value: Any) -> Any:
    """A deep copy of a JSON value with secrets replaced by ``"[redacted]"``.

    Mappings become dicts and tuples become lists, so the result is plain JSON whatever came in.
    """
    if isinstance(value, Mapping):
        return {
            key: (REDACTED if value[key] is not None else None)
            if isinstance(key, str) and is_secret_key(key)
            else redact(value[key])
            for key in value
        }
    if isinstance(value, (list, tuple)):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def mask_url(url: str) -> str:
    """``url`` with the password of its userinfo replaced by ``***``, for printing settings."""
    return URL_PASSWORD.sub(r"\1:***@", url)


# --- reports -------------------------------------------------------------------------------------

_JSON = ("artefact", "provider_payload", "raw")
_NESTED_JSON = {"tool_calls": ("arguments", "result")}
"""The string columns (and list-of-structs fields) that hold JSON text; every other string is free text."""


def _json_text(text: str | None) -> str | None:
    """Redact a JSON-text cell; an unchanged value keeps its exact text."""
    if text is None or not _SUSPECT.search(text):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return redact_text(text)
    clean = redact(value)
    return text if clean == value else json.dumps(clean, sort_keys=True, default=str)


def _cells(column: "pa.ChunkedArray", fix: Any) -> "pa.ChunkedArray | pa.Array":
    """The column with ``fix`` applied to its suspect cells; untouched (no copy) when none is suspect."""
    if column.null_count == len(column):
        return column
    combined = column.combine_chunks()
    fixed = _strings(combined, fix)
    return column if fixed is combined else fixed


def _strings(array: "pa.Array", fix: Any) -> "pa.Array":
    """A string array with ``fix`` applied to its suspect values only; the same array when none is."""
    import pyarrow as pa
    import pyarrow.compute as pc

    suspect = pc.fill_null(pc.match_substring_regex(array, SUSPECT_PATTERN, ignore_case=True), False)
    if not pc.any(suspect).as_py():
        return array
    values = array.to_pylist()
    for i in pc.indices_nonzero(suspect).to_pylist():
        values[i] = fix(values[i])
    return pa.array(values, type=array.type)


def _nested(column: "pa.ChunkedArray", json_fields: tuple[str, ...]) -> "pa.ChunkedArray | pa.Array":
    """A list-of-structs column (transcript, tool calls) with its string fields redacted.

    Only the string fields are rebuilt, and in them only the suspect values are touched, so a long
    transcript with nothing secret-looking in it costs a pattern match per turn."""
    import pyarrow as pa

    lists = column.combine_chunks()
    if not len(lists) or lists.null_count == len(lists):
        return column
    items: pa.StructArray = lists.values
    children = [items.field(i) for i in range(items.type.num_fields)]
    names = [items.type.field(i).name for i in range(items.type.num_fields)]
    fixed = [
        _strings(child, _json_text if name in json_fields else redact_text) if _is_text(child.type) else child
        for name, child in zip(names, children, strict=True)
    ]
    if all(new is old for new, old in zip(fixed, children, strict=True)):
        return column
    struct = pa.StructArray.from_arrays(fixed, fields=list(items.type),
                                        mask=items.is_null() if items.null_count else None)  # fmt: skip
    return pa.ListArray.from_arrays(lists.offsets, struct, type=lists.type,
                                    mask=lists.is_null() if lists.null_count else None)  # fmt: skip


def _is_text(kind: "pa.DataType") -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _is_struct_list(kind: "pa.DataType") -> bool:
    import pyarrow as pa

    return (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and pa.types.is_struct(kind.value_type)


def _table(table: "pa.Table") -> "pa.Table":
    """Every string column, and every string field of a list of structs, by its kind: JSON text
    (:data:`_JSON`, :data:`_NESTED_JSON`) parsed and redacted by key and text, the rest as free text.
    Walking the schema rather than a list of names means a column added later is covered too."""
    for i, f in enumerate(table.schema):
        if _is_text(f.type):
            new = _cells(table[f.name], _json_text if f.name in _JSON else redact_text)
        elif _is_struct_list(f.type):
            new = _nested(table[f.name], _NESTED_JSON.get(f.name, ()))
        else:
            continue
        if new is not table[f.name]:
            table = table.set_column(i, f, new)
    return table


def redact_report(report: "Report") -> "Report":
    """``report`` with every string field redacted: transcript text, tool-call names, arguments and
    results, errors, artefacts, provider references and payloads (keys at any depth), evaluation names,
    rationales and raw objects, and the report's meta. Columns with nothing suspect are kept as they
    are (no copy)."""
    from dataclasses import replace

    return replace(report, case_runs=_table(report.case_runs), evaluations=_table(report.evaluations),
                   meta=redact(report.meta))  # fmt: skip


_LOGGERS = ("assay", "prefect")
"""Loggers whose messages pass :func:`redact_text`: ours, and Prefect's (it logs our task arguments and errors)."""


def install_log_redaction() -> None:
    """Every log record of :data:`_LOGGERS` is redacted as it is made, before any handler (console, file,
    Prefect's API) sees it: its message is formatted, passed through :func:`redact_text`, and frozen. Idempotent."""
    import logging

    current = logging.getLogRecordFactory()
    if getattr(current, "_assay_redacting", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = current(*args, **kwargs)
        if record.name.split(".", 1)[0] in _LOGGERS:
            message = record.getMessage()
            cleaned = redact_text(message)
            if cleaned != message:
                record.msg, record.args = cleaned, ()
            if record.exc_info and record.exc_info[1] is not None:  # the traceback ends with the message
                import traceback

                text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
                cleaned = redact_text(text)
                if cleaned != text:
                    record.exc_text = cleaned  # formatters use this instead of formatting the exception again
        return record

    factory._assay_redacting = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


__all__ = [
    "install_log_redaction",
    "REDACTED", "SECRET_KEYS", "SECRET_WORDS", "SUSPECT_PATTERN", "is_secret_key", "mask_url", "redact",
    "redact_report", "redact_text",
]  # fmt: skip
