"""Configuration: one pydantic-settings model, environment prefix ``ASSAY_``."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Where Assay keeps things and how it reaches vendors. Every field reads ``ASSAY_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="ASSAY_", extra="forbid")

    home: Path = Field(default=Path(".assay"))
    """Holds the embedded catalog (``catalog.db``), the lake (``lake/``) and Prefect's home."""

    catalog_url: str | None = None
    """SQLAlchemy URL of the catalog; default ``sqlite:///<home>/catalog.db``."""

    lake_url: str | None = None
    """fsspec URL or path of the evidence lake; default ``<home>/lake``."""

    judge_base_url: str | None = None
    """Base URL of an OpenAI-compatible chat API used as our judge."""

    judge_model: str | None = None
    """Model name sent to the judge."""

    judge_api_key: SecretStr | None = None
    """Key for the judge endpoint."""

    lease_seconds: float = 120.0
    """How long a claimed lease lasts before it must be renewed."""

    @property
    def resolved_catalog_url(self) -> str:
        return self.catalog_url or f"sqlite:///{(self.home / 'catalog.db').resolve()}"

    @property
    def resolved_lake_url(self) -> str:
        return self.lake_url or str((self.home / "lake").resolve())

    @property
    def prefect_home(self) -> Path:
        return (self.home / "prefect").resolve()
