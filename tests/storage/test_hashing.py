"""The column form of stable_id gives exactly the scalar form's ids, in row order."""

from __future__ import annotations

import random

import polars as pl
import pytest

from assay.core.ids import stable_id
from assay.storage.hashing import stable_ids


@pytest.mark.parametrize("seed", range(5))
def test_stable_ids_agree_with_stable_id_row_by_row(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = "abcXYZ019 -_/\u00e9\u65e5\U0001f9ea\x1f"
    cols = [pl.Series([("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))) for _ in range(5000)])
            for _ in range(3)]
    got = stable_ids(cols[0], "run-1", cols[1], cols[2]).to_list()
    assert got == [stable_id(a, "run-1", b, c) for a, b, c in zip(*(c.to_list() for c in cols), strict=True)]


def test_no_rows_gives_no_ids_and_a_null_part_is_refused() -> None:
    assert stable_ids(pl.Series([], dtype=pl.String), "x").to_list() == []
    with pytest.raises(ValueError, match="not null"):
        stable_ids(pl.Series(["a", None]), "x")
