"""A workspace: the settings, the catalog engine, the lake and the ledger, opened together."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property

import sqlalchemy as sa

from assay.core.settings import Settings
from assay.storage.catalog.engine import create_catalog_engine, migrate
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.lake import Lake


@dataclass
class Workspace:
    settings: Settings

    @cached_property
    def engine(self) -> sa.Engine:
        engine = create_catalog_engine(self.settings.resolved_catalog_url)
        migrate(engine)
        return engine

    @cached_property
    def lake(self) -> Lake:
        return Lake.from_settings(self.settings, self.engine)

    @cached_property
    def ledger(self) -> CatalogLedger:
        return CatalogLedger(self.engine, self.lake)

    def close(self) -> None:
        if "engine" in self.__dict__:
            self.engine.dispose()


def open_workspace(settings: Settings | None = None) -> Workspace:
    """Open (and, on first use, create) the workspace the settings describe."""
    settings = settings or Settings()
    settings.home.mkdir(parents=True, exist_ok=True)
    # Prefect keeps its own database; inside ASSAY_HOME, parallel workspaces never share one.
    os.environ.setdefault("PREFECT_HOME", str(settings.prefect_home))
    # The temporary server's usage telemetry cannot leave an air-gapped machine; don't try.
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    return Workspace(settings)
