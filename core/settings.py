"""Configuration: one pydantic-settings model, environment prefix ``ASSAY_``."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, field_validator
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

    tool_mock_bind: str = "127.0.0.1:0"
    """``host:port`` the tool-mock server of a run listens on (port 0: any free port)."""

    tool_mock_url: str | None = None
    """The public base URL a vendor reaches the tool-mock server by (a tunnel or ingress forwarding to
    ``tool_mock_bind``); default: the address it listens on, which only a vendor on this machine reaches."""

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

    pending_timeout_seconds: float = Field(default=86400.0, gt=0)
    """How long a created run may wait unclaimed before `assay reap` ends it ``timed_out``
    (``never_started``): a run whose flow died before its runner started has no lease to expire, and
    often no deadline, so without this it would stay pending for ever."""

    lake_grace_seconds: float = Field(default=3600.0, gt=0)
    """How long a file nobody lists (a crashed writer's) or a superseded one (compaction, re-judging)
    stays before vacuum deletes it; longer than any writer takes between writing a file and committing it."""

    lake_target_file_bytes: int = Field(default=128 * 2**20, gt=0)
    """The size compaction aims for when it rewrites a partition's small files."""

    max_bundle_bytes: int = Field(default=32 * 2**20, gt=0)
    """The largest bundle file ``assay load`` reads (``ASSAY_MAX_BUNDLE_BYTES``); a bigger one is refused
    after reading at most one byte past the cap, so a file that never ends cannot exhaust memory."""

    max_config_bytes: int = Field(default=8 * 2**20, gt=0)
    """The largest compiled config a suite's target may name (``ASSAY_MAX_CONFIG_BYTES``)."""

    max_call_bytes: int = Field(default=4 * 2**20, gt=0, le=16 * 2**20)
    """The longest line of a call set (``ASSAY_MAX_CALL_BYTES``), checked at load. At most 16 MiB: the
    runner's bulk reader (DuckDB) refuses longer lines, and a line refused at load is never found at run time."""

    max_nesting: int = Field(default=64, ge=8, le=200)
    """How deeply lists and mappings may nest in a bundle, a config or a call-set line (``ASSAY_MAX_NESTING``);
    deeper input is refused by name rather than exhausting the parser's stack."""

    dask_address: str | None = None
    """A running Dask scheduler (``tcp://host:8786``, ``ASSAY_DASK_ADDRESS``) that wide work (re-judging,
    compaction) maps its tasks over; its workers open the workspace from their own environment, so give
    them the same ``ASSAY_*`` settings. Neither this nor ``dask_workers``: Prefect's thread pool, in this process."""

    dask_workers: int | None = Field(default=None, ge=1)
    """Start a temporary Dask cluster on this machine for each wide flow run, with this many worker
    processes of one thread each (``ASSAY_DASK_WORKERS``); set this or ``dask_address``, not both."""

    server_start_timeout_seconds: float = Field(default=120.0, gt=0)
    """How long ``assay server start`` waits for the workspace's Prefect server to answer
    (``ASSAY_SERVER_START_TIMEOUT_SECONDS``); a loaded machine needs far more than Prefect's own 20 s."""

    notify_webhook_url: SecretStr | None = None
    """Where a failed gate and a nightly sweep with a failure are posted, as JSON (``ASSAY_NOTIFY_WEBHOOK_URL``:
    a chat's incoming webhook, an incident tool's); a secret, since such a URL is its own credential."""

    @field_validator("home", mode="before")
    @classmethod
    def _home_not_empty(cls, value: object) -> object:
        """An empty ``ASSAY_HOME=`` would be the current folder: a catalog written wherever one stands."""
        if isinstance(value, str) and not value.strip():
            raise ValueError(
                "is empty; unset it (default ./.assay), or set it to a workspace folder (`assay init` creates one)"
            )
        return value

    @property
    def resolved_catalog_url(self) -> str:
        return self.catalog_url or f"sqlite:///{(self.home / 'catalog.db').resolve()}"

    @property
    def resolved_lake_url(self) -> str:
        return self.lake_url or str((self.home / "lake").resolve())

    @property
    def prefect_home(self) -> Path:
        return (self.home / "prefect").resolve()
