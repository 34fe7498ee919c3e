"""Codex CLI rollouts read as each Codex version writes them: what a person reviewing the session relies on.

The conformance kit (``test_capture_kit.py``) pins every field of each golden case; these tests state the
reading a user cares about — commands with their exit codes, test runs, files written, the person's asks, the
session a fork came from — and check it holds when the same session is written the way another version writes
it (without ``exec_command_end`` events, without turn ids, on Windows, with record types this reader does not
know).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from assay.adapters.capture import read_session
from assay.adapters.capture.codex import CodexAdapter
from assay.adapters.capture.codex_calls import call_output, patch_of, shell_command
from assay.core.session import Session
from assay.flows.exam_suggest import test_history as history_of
from assay.flows.exam_suggest import verify_script

CODEX = Path(__file__).resolve().parents[1] / "fixtures" / "sessions" / "codex"


def _rollout(case: str) -> Path:
    (found,) = (CODEX / case).glob("rollout-*.jsonl")
    return found


@dataclass(frozen=True)
class Reading:
    """What a case must read as."""

    commands: tuple[tuple[str, int | None, bool], ...]
    """(command, exit code, is a test run), in order."""
    written: tuple[str, ...]
    first_ask: str
    asks: int
    version: str
    resumed_from: str | None = None
    errors: tuple[str, ...] = ()
    """Names of the calls that failed, in order."""
    unmatched: int = 0
    verify: str | None = None
    """The test command an exam distilled from the session checks the work with (its ``verify.sh``)."""


PYTEST_DRY_RUN = "python -m pytest -q tests/test_cleanup_dry_run.py"
PYTEST_INVOICE = "python -m pytest -q tests/test_invoice.py"
PYTEST_SINCE = "python -m pytest -q tests/test_report_since.py"
READINGS = {
    "shell_heredoc_0_34": Reading(
        commands=(('rg -n "cleanup" src/acme/cli.py', 0, False), (PYTEST_DRY_RUN, 1, True), (PYTEST_DRY_RUN, 0, True)),
        written=("src/acme/cli.py", "tests/test_cleanup_dry_run.py"),
        first_ask="Add a --dry-run flag to `acme cleanup`", asks=1, version="0.34.0", errors=("shell",),
        verify=PYTEST_DRY_RUN),
    "tool_calls_0_50": Reading(
        commands=(("sed -n '1,60p' src/acme/invoice.py", 0, False), (PYTEST_INVOICE, 1, True), (PYTEST_INVOICE, 0, True)),
        written=("src/acme/invoice.py",), first_ask="Invoice totals are off by a cent", asks=1, version="0.50.0",
        errors=("shell", "apply_patch"), verify=PYTEST_INVOICE),
    "search_compact_abort_0_63": Reading(
        commands=(('rg -n "@validator|@root_validator" src/acme/models.py', 0, False), ("python -m pytest -q", None, True),
                  ("python -m pytest -q tests/test_models.py", 0, True)),
        written=("src/acme/models.py",), first_ask="Our models still use pydantic v1", asks=2, version="0.63.0",
        unmatched=1, verify="python -m pytest -q tests/test_models.py"),
    "unified_exec_0_118": Reading(
        commands=(('rg -n "def export_orders|/ len" src/acme', 0, False), ("python -m pytest -q", 1, True),
                  ("python -m pytest -q", 0, True), ("ruff check src/acme/export.py", 1, False)),
        written=("src/acme/export.py", "tests/test_export_empty.py"),
        first_ask="The nightly export crashes with ZeroDivisionError", asks=1, version="0.118.0",
        errors=("exec_command", "exec_command"), verify="python -m pytest -q"),
    "forked_0_118": Reading(
        commands=((PYTEST_SINCE, 1, True), (PYTEST_SINCE, 0, True)),
        written=("src/acme/report.py", "tests/test_report_since.py"), first_ask="Go ahead and fix it", asks=1,
        version="0.118.0", resumed_from="019d4d38-5734-75cc-858c-242b96206470", errors=("exec_command",),
        verify=PYTEST_SINCE),
}


def _check(session: Session, reading: Reading) -> None:
    assert [(c.command, c.exit_code, c.is_test) for c in session.commands] == list(reading.commands)
    assert session.files_written == reading.written
    assert session.user_turns[0].text.startswith(reading.first_ask)
    assert len(session.user_turns) == reading.asks
    assert session.harness_version == reading.version
    assert session.resumed_from == reading.resumed_from
    assert tuple(c.name for c in session.tool_calls if c.status == "error") == reading.errors
    assert len(session.capture.unmatched_calls) == reading.unmatched
    assert session.capture.unknown_types == {}


@pytest.mark.parametrize("case", sorted(READINGS))
def test_each_version_reads_as_the_session_went(case: str) -> None:
    _check(read_session(_rollout(case)), READINGS[case])


@pytest.mark.parametrize("case", sorted(READINGS))
def test_an_exam_checks_the_work_with_the_test_run_that_turned_green(case: str) -> None:
    """A patch that names pytest is never the exam's check: the check is the session's own test command."""
    session = read_session(_rollout(case))
    script = verify_script(history_of(session, Path(session.cwd or ".")))
    assert script is not None and script.rstrip().splitlines()[-1] == READINGS[case].verify


@pytest.mark.parametrize("case", sorted(p.name for p in CODEX.iterdir() if p.is_dir()))
def test_a_patch_is_a_write_never_a_command(case: str) -> None:
    session = read_session(_rollout(case))
    commands = {c.call_id for c in session.commands}
    for call in session.tool_calls:
        if patch_of(call.name, call.input) is not None:
            assert call.call_id not in commands, f"{call.call_id} applies a patch"
            assert bool(call.writes) == (call.status == "ok"), call.call_id
    assert not [c.command for c in session.commands if "*** Begin Patch" in c.command]
    assert {c.call_id for c in session.commands} == {c.call_id for c in session.tool_calls
                                                    if shell_command(c.name, c.input) is not None}


@pytest.mark.parametrize("case", sorted(p.name for p in CODEX.iterdir() if p.is_dir()))
def test_a_command_that_exited_non_zero_is_an_error_call(case: str) -> None:
    session = read_session(_rollout(case))
    for run in session.commands:
        call = session.call(run.call_id)
        assert call.exit_code == run.exit_code
        if run.exit_code is None:
            continue
        assert call.status == ("ok" if run.exit_code == 0 else "error"), run.command


def _rewrite(case: str, tmp_path: Path, change) -> Path:
    """The case's rollout with each record passed through ``change`` (None drops it)."""
    source = _rollout(case)
    lines = []
    for raw in source.read_text(encoding="utf-8").splitlines():
        record = change(json.loads(raw))
        if record is not None:
            lines.append(json.dumps(record, ensure_ascii=False))
    target = tmp_path / source.name
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def test_unified_exec_exit_codes_read_from_the_outputs_when_no_end_event_is_kept(tmp_path: Path) -> None:
    """Rollouts that keep no ``exec_command_end`` give the same commands: the exit code is in the output, or, for
    a process that outlived its call, in the output of the ``write_stdin`` poll that saw it exit."""
    events = ("exec_command_begin", "exec_command_end")
    bare = _rewrite("unified_exec_0_118", tmp_path, lambda r: None if r["payload"].get("type") in events else r)
    session = read_session(bare)
    _check(session, READINGS["unified_exec_0_118"])
    poll = next(c for c in session.tool_calls if c.name == "write_stdin")
    assert poll.status == "ok" and poll.exit_code is None, "a poll is not the command it polls"


def test_an_end_event_decides_the_exit_code(tmp_path: Path) -> None:
    def failed_lint_passes(record: dict) -> dict:
        payload = record["payload"]
        if payload.get("type") == "exec_command_end" and payload["command"][-1].startswith("ruff"):
            payload["exit_code"] = 0
        return record

    session = read_session(_rewrite("unified_exec_0_118", tmp_path, failed_lint_passes))
    lint = next(c for c in session.commands if c.command.startswith("ruff"))
    assert lint.exit_code == 0 and session.call(lint.call_id).status == "ok"


def test_a_fork_leaves_the_earlier_session_out(tmp_path: Path) -> None:
    session = read_session(_rollout("forked_0_118"))
    said = " ".join(t.text for t in session.turns)
    assert "ignore the time zone" not in said, "the earlier session's ask is not this session's"
    assert not [c for c in session.tool_calls if str(c.input.get("cmd", "")).startswith("sed")]
    day = tmp_path / "sessions" / "2026" / "04" / "02"
    day.mkdir(parents=True)
    shutil.copy(_rollout("forked_0_118"), day)
    (ref,) = CodexAdapter().discover(Path("/home/dev/acme-app"), {"CODEX_HOME": str(tmp_path)})
    assert ref.session_id == session.session_id
    assert ref.first_prompt and ref.first_prompt.startswith("Go ahead and fix it")


def test_a_fork_written_without_turn_ids_ends_its_replay_at_the_pause(tmp_path: Path) -> None:
    """Versions whose turns carry no UUIDv7 id write the replay in one burst as the session starts; the
    session's own part begins at the first pause."""

    def older(record: dict) -> dict:
        record["payload"].pop("turn_id", None)
        record["payload"].pop("forked_from_id", None)
        return record

    _check(read_session(_rewrite("forked_0_118", tmp_path, older)), READINGS["forked_0_118"])


def test_compaction_is_a_system_turn_and_an_interrupted_run_has_no_exit_code() -> None:
    session = read_session(_rollout("search_compact_abort_0_63"))
    compactions = [t for t in session.turns if t.role == "system" and t.text.startswith("Migrating src/acme")]
    assert len(compactions) == 1, "the compacted line and its event are one compaction"
    (search,) = [c for c in session.tool_calls if c.name == "web_search"]
    assert search.status == "ok" and "field_validator" in json.dumps(search.input)
    (interrupted,) = session.capture.unmatched_calls
    assert session.call(interrupted).status == "unmatched"


def test_a_windows_session_keeps_its_paths_and_unwraps_powershell() -> None:
    session = read_session(_rollout("windows_oss_0_55"))
    assert session.cwd == "C:\\Users\\dev\\acme-app"
    pytest_run = "python -m pytest -q tests\\test_paths.py"
    assert [(c.command, c.exit_code, c.is_test, c.cwd) for c in session.commands] == [
        ("Get-Content src\\acme\\paths.py -TotalCount 20", 0, False, session.cwd),
        (pytest_run, 1, True, session.cwd), (pytest_run, 0, True, session.cwd)]
    assert session.files_written == ("src\\acme\\paths.py",)
    assert session.user_turns[0].text.startswith("tests\\test_paths.py fails on Windows")


def test_record_types_it_does_not_know_are_counted_never_fatal(tmp_path: Path) -> None:
    source = _rollout("unified_exec_0_118")
    extra = [{"timestamp": "2026-03-31T08:00:00.000Z", "type": "session_state", "payload": {"x": 1}},
             {"timestamp": "2026-03-31T08:00:00.000Z", "type": "response_item", "payload": {"type": "image_generation_call"}},
             {"timestamp": "2026-03-31T08:00:00.000Z", "type": "event_msg", "payload": {"type": "thread_goal_updated"}},
             {"timestamp": "2026-03-31T08:00:00.000Z", "type": "event_msg", "payload": {"type": "thread_goal_updated"}}]
    target = tmp_path / source.name
    target.write_text(source.read_text(encoding="utf-8") + "".join(json.dumps(r) + "\n" for r in extra),
                      encoding="utf-8")
    session = read_session(target)
    assert session.capture.unknown_types == {"event_msg/thread_goal_updated": 2,
                                             "response_item/image_generation_call": 1, "session_state": 1}
    assert session.commands == read_session(source).commands


APPLY = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x = 1\n+x = 2\n*** Move to: src/b.py\n*** End Patch"


@pytest.mark.parametrize("name,arguments", [
    ("apply_patch", {"input": APPLY}),
    ("shell", {"command": ["apply_patch", APPLY]}),
    ("shell", {"command": ["bash", "-lc", f"apply_patch <<'EOF'\n{APPLY}\nEOF\n"]}),
    ("shell", {"command": ["bash", "-lc", f"cd src && apply_patch <<\"PATCH\"\n{APPLY}\nPATCH"]}),
    ("shell_command", {"command": f"applypatch <<EOF\n{APPLY}\nEOF"}),
    ("exec_command", {"cmd": f"apply_patch <<'PATCH'\n{APPLY}\nPATCH", "workdir": "/w"}),
], ids=["tool", "argv", "heredoc", "cd-heredoc", "shell-command", "unified-exec"])
def test_every_form_of_a_patch_is_read_as_one(name: str, arguments: dict) -> None:
    patch = patch_of(name, arguments)
    assert patch is not None and patch.paths() == ["src/a.py", "src/b.py"]
    assert shell_command(name, arguments) is None


@pytest.mark.parametrize("script", [
    f"apply_patch <<'EOF'\n{APPLY}\nEOF\npython -m pytest -q",
    "cat <<'EOF' > notes.txt\n*** Update File: src/a.py\nEOF",
    "apply_patch --help",
])
def test_a_script_that_does_more_than_apply_a_patch_is_a_command(script: str) -> None:
    arguments = {"command": ["bash", "-lc", script]}
    assert patch_of("shell", arguments) is None
    assert shell_command("shell", arguments) == (script, None)


PATCHED = json.dumps({"output": "Failed to find expected lines", "metadata": {"exit_code": 1, "duration_seconds": 0.0}})


@pytest.mark.parametrize("raw,exit_code,running", [
    ("Command: /bin/bash -lc make\nChunk ID: 1a\nWall time: 1.0 seconds\nProcess running with session ID 7\n"
     "Original token count: 5\nOutput:\nProcess exited with code 0\n", None, "7"),
    ("Chunk ID: 1b\nWall time: 0.2 seconds\nProcess exited with code 2\nOriginal token count: 1\nOutput:\nExit code: 0\n",
     2, None),
    ("Exit code: 3\nWall time: 0.1 seconds\nOutput:\nboom\n", 3, None),
    (json.dumps({"output": "ok", "metadata": {"exit_code": 0, "duration_seconds": 0.1}}), 0, None),
    ("Wall time: 0.0000 seconds\nOutput:\n" + PATCHED, 1, None),
    ([{"type": "input_text", "text": "Exit code: 4\nWall time: 0.1 seconds\nOutput:\n"}], 4, None),
    ("plain text a tool returned, Exit code: 9 inside it", None, None),
], ids=["running", "unified", "shell-command", "json", "patch-via-exec", "content-items", "no-header"])
def test_an_exit_code_is_read_from_the_header_never_from_what_the_command_printed(raw, exit_code, running) -> None:
    output = call_output(raw)
    assert (output.exit_code, output.running) == (exit_code, running)
