"""Lakes for the storage tests, each on the shared ``engine`` fixture (SQLite, and PostgreSQL when set up).

- ``lake``: a lake in a temp dir;
- ``memory_lake``: a lake on fsspec's in-memory filesystem (``memory://``), emptied afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest
import sqlalchemy as sa

from assay.storage.lake import Lake


@pytest.fixture
def lake(tmp_path: Path, engine: sa.Engine) -> Lake:
    """An empty lake under ``tmp_path``, listed by ``engine``'s manifest."""
    return Lake(str(tmp_path / "lake"), engine)


@pytest.fixture
def memory_lake(engine: sa.Engine) -> Iterator[Lake]:
    """An empty lake on the in-memory filesystem, listed by ``engine``'s manifest."""
    url = f"memory://lake-{uuid.uuid4().hex}"
    yield Lake(url, engine)
    fsspec.filesystem("memory").rm(url, recursive=True)
