"""The Codex harness adapter without the CLI: the command line it builds from an exam, how it reads a run's
events, where it finds the rollout, and how its calls are named in a case run.

The real CLI replaying an exam is in ``test_real_harnesses.py`` (end to end).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from assay.adapters.runners.codex import CodexHarness
from assay.adapters.runners.harness import Replay, harness_for
from assay.core.exam import (Exam, ExamAssertion, ExamEnvironment, ExamRunner, ExamSource, ExamSpec, ExamTools,
                             ExamWorkspace, load_exam, write_exam)
from assay.core.session import Session, SessionToolCall

STARTED = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
THREAD = "0199a213-81c0-7800-8aa1-bbab2a035a53"


def exam(tmp_path: Path, *, harness: str = "claude-code", allow: tuple[str, ...] = ("Bash", "Edit", "Read"),
         model: str | None = "claude-sonnet-4-6") -> Exam:
    spec = ExamSpec(slug="half-cent", runner=ExamRunner(name=harness), model=model,
                    workspace=ExamWorkspace(commit="0" * 40), environment=ExamEnvironment(fingerprint="sha256:" + "0" * 64),
                    tools=ExamTools(allow=allow), source=ExamSource(session_id="s", harness=harness))
    assertion = ExamAssertion(key="rounds-up", tier="outcome", check="file_contains",
                              params={"path": "pricing.py", "text": "HALF_UP"}, status="accepted")
    return load_exam(write_exam(tmp_path / "exams" / "half-cent", spec, "Fix the rounding.\n", [assertion],
                                force=True))


@pytest.mark.parametrize("harness,allow,model,sandbox,extra", [
    ("claude-code", ("Bash", "Edit", "Read"), None, "danger-full-access", ["-c", 'web_search="disabled"']),
    ("claude-code", ("Read", "Grep"), None, "read-only", ["-c", 'web_search="disabled"']),
    ("codex", ("Edit", "WebSearch"), "gpt-5.1-codex", "danger-full-access", ["--model", "gpt-5.1-codex"]),
], ids=["exam-that-writes", "read-only-exam", "exam-with-a-model"])
def test_the_command_reads_the_ask_on_stdin_in_the_sandbox_the_allowlist_calls_for(
        tmp_path: Path, harness: str, allow: tuple[str, ...], model: str | None, sandbox: str,
        extra: list[str]) -> None:
    adapter = CodexHarness(environ={"ASSAY_CODEX_BIN": "/opt/codex"})
    argv = adapter.command(exam(tmp_path, harness=harness, allow=allow, model=model), tmp_path / "ask.md", "id")
    assert argv[:3] == ["/opt/codex", "exec", "--json"] and argv[-1] == "-" and adapter.feeds_stdin
    assert argv[argv.index("--sandbox") + 1] == sandbox
    assert argv[argv.index("--sandbox") + 2:-1] == extra


def events(*kinds: str) -> list[str]:
    """The JSON event lines of a run, ``thread.started`` first."""
    lines = [{"type": "thread.started", "thread_id": THREAD}]
    for kind in kinds:
        if kind == "turn.failed":
            lines.append({"type": kind, "error": {"message": "unexpected status 500"}})
        elif kind == "error":
            lines.append({"type": kind, "message": "stream disconnected before completion"})
        else:
            lines.append({"type": kind})
    return [json.dumps(line) for line in lines] + ["not json"]


@pytest.mark.parametrize("kinds,exit_code,status,stop,says", [
    (("turn.started", "turn.completed"), 0, "executed", "success", None),
    (("turn.started", "turn.failed"), 1, "error", "error", "unexpected status 500"),
    (("turn.started", "error", "turn.completed"), 0, "error", "error", "stream disconnected"),
    (("turn.started",), 137, "error", "crash", "(exit 137, no turn.completed event): Killed"),
    (("turn.started", "turn.completed"), 2, "error", "success", "exited 2: Killed"),
], ids=["completed", "turn-failed", "error-event", "crashed", "bad-exit"])
def test_the_outcome_is_read_from_the_events_and_a_failure_is_an_error(
        tmp_path: Path, kinds: tuple[str, ...], exit_code: int, status: str, stop: str, says: str | None) -> None:
    adapter = CodexHarness(environ={"CODEX_HOME": str(tmp_path / "codex")})
    outcome = adapter.interpret(events(*kinds), exit_code, "Killed\n", exam=exam(tmp_path), started=STARTED,
                                ended=STARTED + timedelta(seconds=3))
    assert (outcome.status, outcome.stop_reason) == (status, stop)
    assert outcome.duration_ms == 3000 and outcome.cost_usd is None and outcome.allowlist_held is None
    assert (outcome.error is None) if says is None else (says in str(outcome.error))


def test_the_session_is_the_rollout_of_the_runs_thread(tmp_path: Path) -> None:
    # a rollout as Codex 0.118 writes one ({timestamp, type, payload} lines, session_meta first; the layout of
    # its sessions folder), cut to what identifies the session; a real one is read end to end elsewhere
    home = tmp_path / "codex"
    day = home / "sessions" / "2026" / "03" / "02"
    day.mkdir(parents=True)
    meta = {"timestamp": "2026-03-02T10:00:00.000Z", "type": "session_meta",
            "payload": {"id": THREAD, "timestamp": "2026-03-02T10:00:00.000Z", "cwd": str(tmp_path),
                        "originator": "codex_exec", "cli_version": "0.118.0", "model_provider": "scripted"}}
    ask = {"timestamp": "2026-03-02T10:00:00.100Z", "type": "response_item",
           "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix it."}]}}
    (day / f"rollout-2026-03-02T10-00-00-{THREAD}.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in (meta, ask)))
    (day / "rollout-2026-03-02T09-00-00-0199a213-0000-7000-8000-000000000000.jsonl").write_text(
        json.dumps({**meta, "payload": {**meta["payload"], "id": "another"}}) + "\n")
    adapter = harness_for("codex", {"CODEX_HOME": str(home)})
    outcome = adapter.interpret(events("turn.completed"), 0, "", exam=exam(tmp_path), started=STARTED,
                                ended=STARTED)
    assert outcome.session is not None
    assert (outcome.session.session_id, outcome.session.harness_version) == (THREAD, "0.118.0")
    missing = CodexHarness(environ={"HOME": str(tmp_path / "nobody")})
    assert missing.interpret(events("turn.completed"), 0, "", exam=exam(tmp_path), started=STARTED,
                             ended=STARTED).session is None


def test_codex_calls_are_reported_in_the_exams_tool_names_keeping_their_own(tmp_path: Path) -> None:
    calls = (SessionToolCall(call_id="1", name="exec_command", input={"cmd": "pytest"}, status="ok", turn=0),
             SessionToolCall(call_id="2", name="apply_patch", input={"input": "*** Begin Patch"}, status="error",
                             turn=1),
             SessionToolCall(call_id="3", name="view_image", input={"path": "a.png"}, status="ok", turn=2))
    outcome = CodexHarness(environ={}).interpret(events("turn.completed"), 0, "", exam=exam(tmp_path),
                                                 started=STARTED, ended=STARTED)
    done = Replay(outcome=outcome.__class__(session=Session(session_id=THREAD, harness="codex", tool_calls=calls),
                                            status="executed"),
                  files_changed=[], probes=[], worktree_name="w", started_at=STARTED, ended_at=STARTED,
                  adapter="codex", tool_names=CodexHarness.tool_names)
    run = done.case_run("half-cent", "replay-0001")
    assert [(c.name, c.arguments, c.is_error) for c in run.tool_calls] == [
        ("Bash", {"cmd": "pytest", "harness_tool": "exec_command"}, False),
        ("Edit", {"input": "*** Begin Patch", "harness_tool": "apply_patch"}, True),
        ("view_image", {"path": "a.png"}, False)]
