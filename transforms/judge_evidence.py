"""What our judge sees of a case run, rendered once, and the hash that names it.

The judge reads a case run's transcript and tool calls as plain text (:func:`evidence_text`)::

    TRANSCRIPT
    caller: My heater is leaking.
    agent: I can book a technician for tomorrow.

    TOOL CALLS
    book_appointment({"slot": "tomorrow"}) -> {"ok": true}

One line per turn (``role: text``) and per tool call (``name(arguments) -> result``, `` [error]`` when
the call failed; ``(no result)`` when it never returned). A missing transcript or tool-call record
reads ``(not recorded)``, an empty one ``(none)``. Timings, costs and provider payloads are not shown.

:func:`evidence_hashes` is the sha256 of exactly that text: the judge cache is keyed by it, so any
change to what the judge would see -- in the evidence or in this rendering -- asks the judge again,
and nothing else does. Rendering is Polars expressions over the whole batch; only the hashing is a
Python loop (hashlib, over distinct texts).
"""

from __future__ import annotations

import hashlib

import polars as pl

__all__ = ["evidence_hashes", "evidence_text", "with_evidence"]


def _lines(column: str, line: pl.Expr) -> pl.Expr:
    items = pl.col(column)
    joined = items.list.eval(line).list.join("\n")
    return pl.when(items.is_null()).then(pl.lit("(not recorded)")).when(items.list.len() == 0) \
        .then(pl.lit("(none)")).otherwise(joined)


def _field(name: str) -> pl.Expr:
    return pl.element().struct.field(name)


def evidence_expr() -> pl.Expr:
    """The evidence text of each row of a frame with ``transcript`` and ``tool_calls`` (the lake's shapes)."""
    turn = pl.concat_str([_field("role").fill_null("?"), pl.lit(": "), _field("text").fill_null("")])
    call = pl.concat_str([
        _field("name").fill_null("?"), pl.lit("("), _field("arguments").fill_null(""), pl.lit(") -> "),
        _field("result").fill_null("(no result)"),
        pl.when(_field("is_error").fill_null(False)).then(pl.lit(" [error]")).otherwise(pl.lit("")),
    ])
    return pl.concat_str([
        pl.lit("TRANSCRIPT\n"), _lines("transcript", turn), pl.lit("\n\nTOOL CALLS\n"), _lines("tool_calls", call),
    ])


def evidence_text(case_runs: pl.DataFrame) -> pl.Series:
    """Per case run (``transcript``, ``tool_calls``): the text the judge sees."""
    return case_runs.select(evidence=evidence_expr())["evidence"]


def evidence_hashes(texts: pl.Series) -> pl.Series:
    """The sha256 (hex) of each evidence text."""
    distinct = texts.unique()
    digests = [hashlib.sha256(t.encode()).hexdigest() for t in distinct.to_list()]
    table = pl.DataFrame({"evidence": distinct, "evidence_hash": digests})
    return texts.to_frame("evidence").join(table, on="evidence", how="left", maintain_order="left")["evidence_hash"]


def with_evidence(case_runs: pl.DataFrame) -> pl.DataFrame:
    """``case_run_id`` with ``evidence`` (the text the judge sees) and ``evidence_hash``."""
    text = evidence_text(case_runs)
    return pl.DataFrame({"case_run_id": case_runs["case_run_id"], "evidence": text,
                         "evidence_hash": evidence_hashes(text)})
