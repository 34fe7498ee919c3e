"""Durations printed for people: one form for every command."""

from __future__ import annotations

import pytest

from assay.flows.durations import human_duration, human_ms


@pytest.mark.parametrize(("seconds", "shown"), [
    (0, "0 ms"), (0.0004, "0.4 ms"), (0.0229689, "23 ms"), (0.9994, "999 ms"), (0.9996, "1 s"), (1.2, "1.2 s"),
    (22.96, "23 s"), (59.94, "59.9 s"), (59.96, "1 min"), (125, "2 min 5 s"), (3600, "1 h"), (3725, "1 h 2 min"),
    (7_205, "2 h"), (93_605, "1 d 2 h"),
])
def test_a_duration_reads_at_the_precision_a_person_needs(seconds: float, shown: str) -> None:
    assert human_duration(seconds) == shown
    assert human_ms(seconds * 1000) == shown


def test_a_negative_duration_is_refused_by_value() -> None:
    with pytest.raises(ValueError, match="-1.5 s"):
        human_duration(-1.5)
