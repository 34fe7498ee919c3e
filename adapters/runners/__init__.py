"""The built-in runners, registered like any plug-in: as entry points in the ``assay.runners`` group.

- ``config_check``: reads a compiled assistant config and executes nothing (structural evidence).
- ``fixed``: returns fixed verdicts; proves the contract without touching any other runner.
- ``recorded``: replays a file of recorded calls (a call set) as case runs and vendor evaluations.
- ``vapi_chat`` / ``elevenlabs_chat``: one definition, two vendors — a scratch assistant (agent) per run,
  a multi-turn text conversation per case with our caller (scripted turns or the caller simulator).
- ``vapi_evals``: our assertions that have a home in VAPI's eval judge plans, judged by VAPI's scorers.
- ``hamming``: asynchronous voice tests on Hamming, submitted at run time and collected by ``assay collect``.
- ``claude_code`` / ``codex`` / ``command_agent``: replay a coding-agent exam (target kind ``exam``) with its
  harness, each replay a case run in its own git worktree at the exam's pin (``codex`` replays Claude Code's
  exams too).

Ask for a runner by name with :func:`assay.core.plugins.runner_class`. Importing this package imports
no runner: each class below is imported when first used, so loading one runner never loads another.
Heavy dependencies (DuckDB, PyArrow) are imported when a runner executes, not at import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.core.lazy import lazy_names

if TYPE_CHECKING:
    from .config_check import ConfigCheckRunner
    from .fixed import FixedRunner
    from .elevenlabs_chat import ElevenLabsChatRunner
    from .hamming import HammingRunner
    from .recorded import RecordedRunner
    from .vapi_chat import VapiChatRunner
    from .vapi_evals import VapiEvalsRunner
    from .exam_runner import ClaudeCodeRunner, CodexRunner, CommandAgentRunner

_MODULES = {
    "ConfigCheckRunner": "config_check", "FixedRunner": "fixed", "RecordedRunner": "recorded",
    "VapiChatRunner": "vapi_chat", "ElevenLabsChatRunner": "elevenlabs_chat", "VapiEvalsRunner": "vapi_evals",
    "HammingRunner": "hamming", "ClaudeCodeRunner": "exam_runner", "CodexRunner": "exam_runner",
    "CommandAgentRunner": "exam_runner",
}

__all__ = ["ClaudeCodeRunner", "CodexRunner", "CommandAgentRunner", "ConfigCheckRunner", "ElevenLabsChatRunner",
           "FixedRunner", "HammingRunner", "RecordedRunner", "VapiChatRunner", "VapiEvalsRunner"]

__getattr__, __dir__ = lazy_names(__name__, _MODULES)  # each runner class imported on first use
