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

    judge_concurrency: int = Field(default=8, ge=1, le=256)
    """At most this many judge requests in flight at once."""

    judge_usd_per_1k_tokens_in: float | None = Field(default=None, ge=0)
    """The judge model's price per 1,000 prompt tokens, so each rubric result records its cost (None: unknown)."""

    judge_usd_per_1k_tokens_out: float | None = Field(default=None, ge=0)
    """The judge model's price per 1,000 completion tokens."""

    caller_base_url: str | None = None
    """Base URL of an OpenAI-compatible chat API playing the caller in platform chat runs (default: the judge's)."""

    caller_model: str | None = None
    """Model name sent to the caller simulator (default: the judge's)."""

    caller_api_key: SecretStr | None = None
    """Key for the caller simulator's endpoint (default: the judge's)."""

    vapi_base_url: str = "https://api.vapi.ai"
    """VAPI's API (a fake on loopback in tests and the demo)."""

    vapi_api_key: SecretStr | None = None
    """VAPI private key, sent as a bearer token."""

    elevenlabs_base_url: str = "https://api.elevenlabs.io"
    """ElevenLabs' API (regional variants exist)."""

    elevenlabs_api_key: SecretStr | None = None
    """ElevenLabs key, sent as ``xi-api-key``."""

    hamming_base_url: str = "https://app.hamming.ai/api/rest"
    """Hamming's REST API."""

    hamming_api_key: SecretStr | None = None
    """Hamming key, sent as a bearer token."""

    hamming_agent_id: str | None = None
    """The Hamming agent (registered with Hamming) whose inbound number is tested."""

    hamming_phone_numbers: list[str] = Field(default_factory=list)
    """The numbers Hamming calls (the deployed assistant's inbound lines), as a JSON list."""

    hamming_test_case_id: str | None = None
    """The Hamming test case every case runs as, its scenario replaced by the case's situation
    (``scenarioFacts`` and ``persona``): Hamming offers no API to create test cases."""

    collect_concurrency: int = Field(default=16, ge=1, le=256)
    """At most this many vendor polls in flight while collecting outstanding asynchronous runs."""

    webhook_tolerance_seconds: float = Field(default=1800.0, gt=0)
    """A signed webhook older than this is refused (ElevenLabs documents 30 minutes)."""

    lease_seconds: float = 120.0
    """How long a claimed lease lasts before it must be renewed."""

    lake_grace_seconds: float = Field(default=3600.0, gt=0)
    """How long a file nobody lists (a crashed writer's) or a superseded one (compaction, re-judging)
    stays before vacuum deletes it; longer than any writer takes between writing a file and committing it."""

    lake_target_file_bytes: int = Field(default=128 * 2**20, gt=0)
    """The size compaction aims for when it rewrites a partition's small files."""

    @property
    def resolved_catalog_url(self) -> str:
        return self.catalog_url or f"sqlite:///{(self.home / 'catalog.db').resolve()}"

    @property
    def resolved_lake_url(self) -> str:
        return self.lake_url or str((self.home / "lake").resolve())

    @property
    def prefect_home(self) -> Path:
        return (self.home / "prefect").resolve()
