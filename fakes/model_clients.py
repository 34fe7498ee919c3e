"""How to point each real harness at the scripted model, offline: the variables and the files each one reads.

- Claude Code reads ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_API_KEY`` (any key does); it keeps its sessions
  under ``CLAUDE_CONFIG_DIR`` (``projects/<encoded cwd>/<session id>.jsonl``). The auto-updater, telemetry,
  error reporting and other traffic that is not a model call are switched off by their documented variables.
- The Codex CLI reads ``$CODEX_HOME/config.toml``: a model provider whose ``base_url`` is the server's
  ``/v1``, ``wire_api = "responses"`` (the only wire API Codex 0.118 accepts), its key from the variable
  ``env_key`` names, no retries (a scripted model does not fail by chance), and no update check. Codex keeps
  its rollouts under ``$CODEX_HOME/sessions/``.
"""

from __future__ import annotations

from pathlib import Path

CODEX_KEY_VARIABLE = "SCRIPTED_MODEL_API_KEY"
"""The variable the Codex provider reads its (dummy) key from."""
CODEX_MODEL = "gpt-5.1-codex"
"""The model Codex is configured with: a name it knows, so it offers its usual tools."""
OFFLINE_KEY = "offline"


def claude_environment(url: str, config_dir: Path) -> dict[str, str]:
    """The variables that send Claude Code's model calls to ``url`` and keep its files in ``config_dir``."""
    return {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": OFFLINE_KEY, "CLAUDE_CONFIG_DIR": str(config_dir),
            "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def codex_config(url: str) -> str:
    """``config.toml`` for a Codex that calls the scripted model at ``url`` (the server's root)."""
    return f'''# The scripted model on loopback (python -m assay.fakes.model_server): Codex runs offline.
model = "{CODEX_MODEL}"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "Scripted model"
base_url = "{url}/v1"
env_key = "{CODEX_KEY_VARIABLE}"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
'''


def codex_environment(url: str, codex_home: Path) -> dict[str, str]:
    """The variables (and ``codex_home/config.toml``, written now) that send Codex's model calls to ``url``."""
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(codex_config(url), encoding="utf-8")
    return {"CODEX_HOME": str(codex_home), CODEX_KEY_VARIABLE: OFFLINE_KEY}


__all__ = ["CODEX_KEY_VARIABLE", "CODEX_MODEL", "claude_environment", "codex_config", "codex_environment"]
