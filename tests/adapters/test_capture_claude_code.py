"""Claude Code sessions read as each harness version writes them: what a person asked (never text the harness
inserted), what the agent did, which subagents it started and from which call, and where it worked.

The conformance kit (``test_capture_kit.py``) holds every case to its golden file; here each case states, in
the terms a reader of the session cares about, what the golden must say."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from assay.adapters.capture import read_session
from assay.adapters.capture.claude_code import ClaudeCodeAdapter, encode_cwd
from assay.adapters.capture.claude_code_lines import is_side_fork
from assay.core.session import Session
from assay.flows.exam_instruction import first_ask, slug_for

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "sessions" / "claude_code"
HOME = "/home/dev/acme-app"
WINDOWS = "C:\\Users\\dev\\acme-app"


@dataclass
class Expected:
    """What a case must read as."""

    version: str
    cwd: str
    asks: list[str]
    """How each of the person's messages in the main session begins, in order."""
    inserted: list[str]
    """How each of the harness's system turns begins, in order."""
    written: list[str]
    commands: list[tuple[str, int | None, bool]]
    """(how the command begins, its exit code, whether it is a test run)."""
    subagents: dict[str, str | None] = field(default_factory=dict)
    """Subagent id -> the id of the call that started it."""
    side_forks: list[str] = field(default_factory=list)


def _call_of(session: Session, name: str, **input_) -> str:
    return next(c.call_id for c in session.tool_calls if c.name == name
                and all(c.input.get(k) == v for k, v in input_.items()))


EXPECTED = {
    "slash_commands_v1_0": Expected(
        version="1.0.85", cwd=HOME,
        asks=["The CSV export drops rows whose name has", "Use the csv module with an import at the"],
        inserted=["Caveat: The messages below were generate", "<command-name>/model</command-name>\n<comm",
                  "<local-command-stdout>Set model to opus (", "[Request interrupted by user for tool use",
                  "<bash-input>git status --short</bash-inp", "<bash-stdout> M src/acme/export.py</bash-"],
        written=[f"{HOME}/src/acme/export.py"],  # once: the rejected Edit wrote nothing
        commands=[("grep -rn \"split(',')\" src/ && ", 0, False), ("python -m pytest tests/test_exp", 0, True)]),
    "ide_context_v2_0": Expected(
        version="2.0.55", cwd=HOME,
        asks=["parse_date crashes on ISO week dates lik", "Keep this function's name; callers impor"],
        inserted=["<ide_opened_file>The user opened the fil", "<ide_selection>The user selected the lin",
                  "<system-reminder>\nThe TodoWrite tool has", "<command-message>changelog is running…</",
                  "Add an entry to CHANGELOG.md under Unrel", "[Request interrupted by user]"],
        written=[f"{HOME}/tests/test_iso_weeks.py", f"{HOME}/src/acme/dates.py", f"{HOME}/CHANGELOG.md"],
        commands=[("uv run pytest tests/test_iso_we", 1, True), ("uv run pytest tests/test_iso_we", 0, True)]),
    "rejected_agent_v2_1": Expected(
        version="2.1.83", cwd=HOME,
        asks=["Why is the nightly import slow? Look at ", "Skip the report job, it runs fine. Fix t"],
        inserted=["[Request interrupted by user for tool use"],
        written=[f"{HOME}/src/acme/importer.py"],
        commands=[("timeout 600 python -m pytest te", 0, True)],
        subagents={"a3f9c2e17b4d6a8c0": "Profile the importer", "a7d1e4b92c5f3a6e8": "Profile the report job"}),
    "side_forks_v2_1": Expected(
        version="2.1.97", cwd=HOME,
        asks=["Make `acme sync` retry a failed upload t", "also log each retry at warning level"],  # typed mid-turn
        inserted=["This session is being continued from a p"],
        written=[f"{HOME}/src/acme/sync.py"],
        commands=[("cd tests && python -m pytest te", 1, True), ("cd tests && python -m pytest te", 0, True)],
        side_forks=["asession_memory-767ece576f2b74e8", "aside_question-c5e5c961a7749e08"]),
    "windows_v2_1": Expected(
        version="2.1.90", cwd=WINDOWS,
        asks=["Add a slugify helper to src\\acme\\text.py"],
        inserted=["<system-reminder>\nNote: C:\\Users\\dev\\acm"],
        written=[f"{WINDOWS}\\src\\acme\\text.py", f"{WINDOWS}\\tests\\test_text.py"],
        commands=[("cd /c/Users/dev/acme-app && pyt", 0, True)]),
}


def _begin(texts: list[str], openings: list[str]) -> bool:
    """Whether each text begins with its opening, one for one."""
    assert len(texts) == len(openings), texts
    return all(t.startswith(o) for t, o in zip(texts, openings, strict=True))


def _session(case: str) -> Session:
    (transcript,) = [p for p in (CASES / case).glob("*.jsonl") if not p.name.startswith("agent-")]
    return read_session(transcript)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_a_session_reads_as_the_harness_wrote_it(case: str) -> None:
    session, want = _session(case), EXPECTED[case]
    assert (session.harness, session.harness_version, session.cwd) == ("claude-code", want.version, want.cwd)
    assert _begin([t.text for t in session.user_turns], want.asks)
    assert _begin([t.text for t in session.turns if t.role == "system" and t.agent_id is None], want.inserted)
    assert list(session.files_written) == want.written
    assert [(c.exit_code, c.is_test) for c in session.commands] == [(code, test) for _, code, test in want.commands]
    assert _begin([c.command for c in session.commands], [command for command, _, _ in want.commands])
    starters = {s.agent_id: session.call(s.parent_call_id).input.get("description") if s.parent_call_id else None
                for s in session.subagents}
    assert starters == want.subagents
    assert list(session.capture.side_forks) == want.side_forks
    assert not session.capture.untraced_subagents and not session.capture.unknown_types


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_no_text_the_harness_inserted_reaches_an_ask_and_no_escape_code_survives(case: str) -> None:
    session = _session(case)
    for turn in session.turns:
        assert "\x1b" not in turn.text, turn.index
        if turn.role == "user":
            assert not any(tag in turn.text for tag in ("<command-", "<local-command", "<ide_", "<system-reminder>",
                                                        "<bash-", "[Request interrupted")), turn.index


def test_an_exam_distilled_from_a_session_is_named_for_the_persons_ask_not_the_harness_text() -> None:
    session = _session("slash_commands_v1_0")  # a /model command and its output come before the ask
    assert slug_for(first_ask(session)) == "the-csv-export-drops-rows-whose-name-has"


def test_a_slash_commands_output_is_kept_as_shown_without_its_colours() -> None:
    session = _session("slash_commands_v1_0")
    raw = (CASES / "slash_commands_v1_0").glob("*.jsonl").__next__().read_text(encoding="utf-8")
    assert "\\u001b[1mopus" in raw  # the file holds the escapes
    output = next(t for t in session.turns if "<local-command-stdout>" in t.text)
    assert output.role == "system" and "Set model to opus (claude-opus-4-1-20250805)" in output.text


def test_a_mention_is_not_a_write_and_a_rejected_edit_writes_nothing() -> None:
    session = _session("slash_commands_v1_0")
    mention = next(c for c in session.commands if "cat tests/test_export.py" in c.command)
    assert session.call(mention.call_id).writes == ()
    rejected = next(c for c in session.tool_calls if c.status == "error")
    assert rejected.name == "Edit" and rejected.writes == ()
    assert [c.name for c in session.tool_calls if c.writes] == ["MultiEdit"]
    assert f"{HOME}/tests/test_export.py" not in session.files_written


def test_a_subagent_whose_call_was_rejected_is_traced_by_its_progress_records() -> None:
    session = _session("rejected_agent_v2_1")
    by_id = {s.agent_id: s for s in session.subagents}
    rejected = by_id["a7d1e4b92c5f3a6e8"]
    assert session.call(rejected.parent_call_id).status == "error"  # its result names no agent: progress does
    assert (rejected.turns, rejected.tool_calls, rejected.nested_in) == (2, 1, None)
    assert session.capture.unmatched_calls == (_call_of(session, "Read", file_path=f"{HOME}/src/acme/report.py"),)
    assert by_id["a3f9c2e17b4d6a8c0"].tokens.responses == 2 and session.tokens.responses == 4


def test_side_question_and_compaction_forks_are_not_subagents_and_add_nothing() -> None:
    session = _session("side_forks_v2_1")
    assert session.subagents == () and {t.agent_id for t in session.turns} == {None}
    assert not any("--frozen" in t.text or "session notes" in t.text for t in session.turns)
    assert "/home/dev/.claude/session-notes.md" not in session.files_written  # the harness's note, not the work
    assert is_side_fork("acompact-767ece576f2b74e8") and not is_side_fork("a3f9c2e17b4d6a8c0")  # 2.1.8x's names
    assert all("/subagents/" not in f for f in session.capture.files)
    assert session.tokens.responses == 6  # the forks' replayed responses are not counted again


def test_a_subagent_file_read_alone_knows_its_version_directory_and_parent_call(tmp_path: Path) -> None:
    folder = CASES / "subagents_current" / "c4d9e2f1-8a7b-4c6d-9e0f-1a2b3c4d5e6f" / "subagents"
    alone = read_session(folder / "agent-a1f3c9e.jsonl")
    whole = _session("subagents_current")
    assert (alone.harness_version, alone.cwd, alone.git_branch) == (whole.harness_version, whole.cwd,
                                                                   whole.git_branch)
    assert alone.model == "claude-haiku-4-5-20251001" and alone.started_at is not None
    (sub,) = alone.subagents
    assert sub.parent_call_id == json.loads((folder / "agent-a1f3c9e.meta.json").read_text())["toolUseId"]
    assert sub.parent_call_id == next(s.parent_call_id for s in whole.subagents if s.agent_id == "a1f3c9e")
    assert [c.call_id for c in alone.tool_calls] == [c.call_id for c in whole.tool_calls if c.agent_id == "a1f3c9e"]
    # without its meta file the subagent reads the same, untraced
    shutil.copy(folder / "agent-a1f3c9e.jsonl", tmp_path)
    bare = read_session(tmp_path / "agent-a1f3c9e.jsonl")
    assert bare.cwd == whole.cwd and bare.capture.untraced_subagents == ("a1f3c9e",)


def test_a_windows_session_is_found_under_its_encoded_project_folder(tmp_path: Path) -> None:
    case = CASES / "windows_v2_1"
    assert encode_cwd(WINDOWS) == "C--Users-dev-acme-app"
    shutil.copytree(case, tmp_path / ".claude" / "projects" / encode_cwd(WINDOWS),
                    ignore=shutil.ignore_patterns("expected.json"))
    environ = {"HOME": str(tmp_path)}
    adapter = ClaudeCodeAdapter()
    for repo in (WINDOWS, "c:\\users\\dev\\acme-app", "C:\\Users\\dev"):
        assert [r.cwd for r in adapter.discover(Path(repo), environ)] == [WINDOWS], repo
    for other in ("C:\\Users\\dev\\acme-app-v2", "D:\\Users\\dev\\acme-app", HOME):
        assert adapter.discover(Path(other), environ) == [], other


@pytest.mark.parametrize("suffix", ["node", "another-runtime"])
def test_a_long_working_directory_is_found_under_its_cut_project_name(suffix: str, tmp_path: Path) -> None:
    """Claude Code cuts a project name over 200 characters and adds a hash whose function depends on its build:
    discovery finds the session either way, and only for its own directory."""
    long_repo = "/home/dev/" + "a-deeply-nested-workspace-folder/" * 7 + "acme-app"
    name = encode_cwd(long_repo)
    assert len(name) == 207 and name.endswith("-vn5b5e")  # the hash the CLI's Node build gives this path
    if suffix != "node":
        name = name[:201] + "k3x9q2"
    (transcript,) = (CASES / "basic").glob("*.jsonl")
    folder = tmp_path / ".claude" / "projects" / name
    folder.mkdir(parents=True)
    (folder / transcript.name).write_text(transcript.read_text(encoding="utf-8").replace(HOME, long_repo),
                                          encoding="utf-8")
    environ, adapter = {"HOME": str(tmp_path)}, ClaudeCodeAdapter()
    for repo in (long_repo, long_repo.rsplit("/", 1)[0], "/home/dev"):
        assert [r.cwd for r in adapter.discover(Path(repo), environ)] == [long_repo], repo
    assert adapter.discover(Path(long_repo + "-v2"), environ) == []
    assert adapter.discover(Path(long_repo.replace("/acme-app", "/other-app")), environ) == []
