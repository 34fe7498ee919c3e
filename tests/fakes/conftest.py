"""Fixtures for the fake vendors' own tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_servers import fake_vapi

from assay.fakes.vapi import FakeVapi


@pytest.fixture
def vapi() -> Iterator[FakeVapi]:
    """A running fake VAPI with no faults."""
    with fake_vapi() as fake:
        yield fake
