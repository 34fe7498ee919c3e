"""``structural.*``: checks on the compiled artefact (the config a compiler produced), not on a conversation.

The artefact is read by :func:`assay.core.compiled.read_artefact`, once per distinct artefact in the
batch (many case runs share one config); each case run then picks its artefact's answer. A part of the
artefact that cannot be read (no prompt, variables that are not an object, ...) makes the mechanisms
that read it null, naming the problem.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict

import polars as pl

from assay.core.compiled import ArtefactParts, read_artefact
from assay.core.mechanisms import ClausePresent, ToolAttached, VariablesResolve

from .evidence import Evidence
from .helpers import decide, found_by, ignoring_case, words
from .registry import mechanism

EVALUATOR = "assay:structural"
PARTS_SCHEMA: dict[str, pl.DataType] = {
    "prompt": pl.String(), "prompt_problem": pl.String(), "unresolved": pl.List(pl.String()),
    "variables_problem": pl.String(), "tools": pl.List(pl.String()), "tools_problem": pl.String(),
}
"""One column per field of :class:`~assay.core.compiled.ArtefactParts`."""


def _read(artefacts: pl.Series) -> tuple[pl.DataFrame, pl.Series]:
    """One row per distinct artefact (null included), read; and each case run's row in it."""
    distinct = artefacts.unique(maintain_order=True)
    parts: list[ArtefactParts] = [read_artefact(text) for text in distinct.to_list()]
    table = pl.DataFrame([{"artefact": text, **asdict(p)} for text, p in zip(distinct, parts, strict=True)],
                         schema={"artefact": pl.String, **PARTS_SCHEMA}).with_row_index("_a")
    index = artefacts.to_frame("artefact").join(
        table.select("artefact", "_a"), on="artefact", how="left", nulls_equal=True, maintain_order="left",
    )["_a"]
    return table, index


def _per_artefact(evidence: Evidence, rows: pl.Series, compute: Callable[[pl.DataFrame], pl.DataFrame]) -> pl.DataFrame:
    """Compute once per distinct artefact, then pick each case run's result."""
    table, index = evidence.memo("structural.artefacts", lambda: _read(evidence.column("artefact")))
    return compute(table)[index.gather(rows)]


@mechanism("structural.clause_present", version=1)
def clause_present(evidence: Evidence, rows: pl.Series, p: ClausePresent, judge: str | None) -> pl.DataFrame:
    """The clause appears in the compiled prompt (literally, or ignoring case)."""
    found = found_by(p.case_insensitive, p.clause, pattern=False)
    failure = f'the compiled prompt does not contain the clause "{p.clause}"{ignoring_case(p.case_insensitive)}'
    return _per_artefact(evidence, rows, lambda a: decide(
        a, pl.when(pl.col("prompt_problem").is_null()).then(found(pl.col("prompt"))), pl.lit(None, pl.Float64),
        pl.col("prompt_problem"), failure, EVALUATOR))


@mechanism("structural.variables_resolve", version=1)
def variables_resolve(evidence: Evidence, rows: pl.Series, p: VariablesResolve, judge: str | None) -> pl.DataFrame:
    """Every ``{{variable}}`` of the prompt has a value; value = how many do not."""
    ok, unresolved = pl.col("variables_problem").is_null(), pl.col("unresolved")
    return _per_artefact(evidence, rows, lambda a: decide(
        a, pl.when(ok).then(unresolved.list.len() == 0), pl.when(ok).then(unresolved.list.len().cast(pl.Float64)),
        pl.col("variables_problem"), words("unresolved variables: ", unresolved.list.join(", ")), EVALUATOR))


@mechanism("structural.tool_attached", version=1)
def tool_attached(evidence: Evidence, rows: pl.Series, p: ToolAttached, judge: str | None) -> pl.DataFrame:
    """A tool named ``p.tool`` is attached to the config."""
    ok, tools = pl.col("tools_problem").is_null(), pl.col("tools")
    attached = pl.when(tools.list.len() > 0).then(tools.list.join(", ")).otherwise(pl.lit("none"))
    return _per_artefact(evidence, rows, lambda a: decide(
        a, pl.when(ok).then(tools.list.contains(pl.lit(p.tool))), pl.lit(None, pl.Float64),
        pl.col("tools_problem"), words(f'no tool named "{p.tool}" is attached; attached: ', attached), EVALUATOR))


__all__ = ["clause_present", "tool_attached", "variables_resolve"]
