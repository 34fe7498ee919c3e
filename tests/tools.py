"""The external tools the tests use, declared in one place: optional on a developer's machine, required in CI.

A test that needs one asks for it here (:func:`need`, or the fixtures below). Where the tool is missing the
test skips with a message naming the install command, unless ``ASSAY_REQUIRE_<TOOL>=1`` is set: then it
fails. ``.ci/run`` installs every tool and sets every one of those variables (a test checks that it does),
so CI can never pass by skipping.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Tool:
    """One external tool: what needs it and how a developer gets it."""

    name: str
    needed_for: str
    install: str

    @property
    def require_env(self) -> str:
        """The variable that makes the tool's absence a failure instead of a skip."""
        return f"ASSAY_REQUIRE_{self.name.upper()}"

    @property
    def required(self) -> bool:
        return os.environ.get(self.require_env) == "1"

    def missing(self, why: str) -> None:
        """Skip the calling test (or fail it, when the tool is required) because the tool is not there."""
        message = f"{self.needed_for} skipped: {why}; to run them: {self.install}"
        if self.required:
            pytest.fail(f"{self.require_env}=1 but {why} ({self.install})", pytrace=False)
        pytest.skip(message)


POSTGRES_ENV = "ASSAY_TEST_POSTGRES_URL"
HARNESSES_BIN = Path(__file__).resolve().parents[1] / ".harnesses" / "node_modules" / ".bin"
"""Where ``make harnesses`` installs the pinned coding-agent CLIs (looked at before PATH)."""
NODE_TOOLS = ("claude", "codex")
"""Tools that are Node programs: they run only with ``node`` on PATH."""

TOOLS: dict[str, Tool] = {
    tool.name: tool for tool in (
        Tool("postgres", "PostgreSQL catalog tests",
             f"apt-get install -y postgresql, start it, and set {POSTGRES_ENV}="
             "postgresql+psycopg://USER:PASSWORD@127.0.0.1:5432/DB (each test gets its own schema)"),
        Tool("chromium", "the HTML report's rendering in a real browser", "apt-get install -y chromium"),
        Tool("claude", "the real Claude Code CLI's tests (offline, against the scripted model)",
             "make harnesses (npm installs the pinned CLIs into .harnesses/; needs node)"),
        Tool("codex", "the real Codex CLI's tests (offline, against the scripted model)",
             "make harnesses (npm installs the pinned CLIs into .harnesses/; needs node)"),
    )
}


def need(name: str) -> str:
    """The tool's executable path (for PostgreSQL: the server's URL), or skip (fail when required)."""
    tool = TOOLS[name]
    if name == "postgres":
        url = os.environ.get(POSTGRES_ENV)
        if not url:
            tool.missing(f"{POSTGRES_ENV} is not set")
        return url
    if name in NODE_TOOLS:
        if not shutil.which("node"):
            tool.missing("`node` is not on PATH")
        found = shutil.which(name, path=os.pathsep.join([str(HARNESSES_BIN), os.environ.get("PATH", "")]))
        if not found:
            tool.missing(f"`{name}` is neither in {HARNESSES_BIN.relative_to(HARNESSES_BIN.parents[2])} nor on PATH")
        return found
    found = shutil.which(name)
    if not found:
        tool.missing(f"`{name}` is not on PATH")
    return found


@pytest.fixture(scope="session")
def chromium() -> str:
    """The headless browser's executable (the tier plug-in counts a test that uses it as end-to-end)."""
    return need("chromium")


@pytest.fixture(scope="session")
def claude_cli() -> str:
    """The real Claude Code CLI's executable (the tier plug-in counts a test that uses it as end-to-end)."""
    return need("claude")


@pytest.fixture(scope="session")
def codex_cli() -> str:
    """The real Codex CLI's executable (the tier plug-in counts a test that uses it as end-to-end)."""
    return need("codex")
