"""One conformance kit for every capture adapter, over its golden transcripts.

Each registered adapter must have golden cases under ``tests/fixtures/sessions/<name with _>/<case>/``: the
transcript files as the harness writes them and ``expected.json``, the Session it must read (its
``capture.files`` and ``capture.bad_lines`` relative to the case). ``ASSAY_REGENERATE_GOLDENS=1`` rewrites
every ``expected.json`` from what the adapters read now (review the diff by eye before keeping it).

For every case the kit also checks properties no golden file can forget: calls paired or listed unmatched,
call ids unique, tokens equal to an independent count over the raw lines, written files named by calls (and,
where the adapter marks each call's writes, exactly those), and discovery through a fake home directory built
in a temporary folder (a Windows session's through its adapter, with Windows path rules).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path, PurePath, PureWindowsPath

import pytest

from assay.adapters.capture import (CAPTURE_ADAPTERS, capture_adapter, find_session, find_sessions,
                                    read_session)
from assay.adapters.capture.base import is_windows_path, json_lines, within
from assay.adapters.capture.claude_code import encode_cwd
from assay.core.errors import AmbiguousError, NotFoundError, UsageError
from assay.core.session import Session, strings_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"
REGENERATE = os.environ.get("ASSAY_REGENERATE_GOLDENS") == "1"


def _folder(harness: str) -> Path:
    return FIXTURES / harness.replace("-", "_")


def _cases() -> list[tuple[str, Path]]:
    return [(name, case) for name in sorted(CAPTURE_ADAPTERS)
            for case in sorted(p for p in _folder(name).glob("*") if p.is_dir())]


CASES = _cases()
CASE_IDS = [f"{name}/{case.name}" for name, case in CASES]


def _transcript(case: Path) -> Path:
    """The case's session file: its one top-level ``.jsonl`` that is not a subagent's."""
    files = [p for p in sorted(case.glob("*.jsonl")) if not p.name.startswith("agent-")]
    assert len(files) == 1, f"{case}: expected one session file, found {[f.name for f in files]}"
    return files[0]


def _relative(case: Path, where: str) -> str:
    return Path(where).relative_to(case).as_posix()


def _as_golden(session: Session, case: Path) -> dict:
    data = session.model_dump(mode="json")
    capture = data["capture"]
    capture["files"] = [_relative(case, f) for f in capture["files"]]
    capture["bad_lines"] = ["{}:{}".format(_relative(case, f), n)
                            for f, n in (line.rsplit(":", 1) for line in capture["bad_lines"])]
    return data


@pytest.mark.parametrize("harness", sorted(CAPTURE_ADAPTERS))
def test_every_adapter_declares_itself_and_has_golden_cases(harness: str) -> None:
    adapter = capture_adapter(harness)
    assert adapter.name == harness
    assert adapter.guarantees and all(isinstance(g, str) and g for g in adapter.guarantees)
    assert any("cost" in g for g in adapter.guarantees), "say what the adapter promises about cost"
    assert [c for n, c in CASES if n == harness], f"no golden cases for {harness!r} under {_folder(harness)}"
    assert harness in TOKEN_ORACLES and harness in INSTALLERS, f"the kit does not know how to check {harness!r}"


@pytest.mark.parametrize("harness,case", CASES, ids=CASE_IDS)
def test_golden(harness: str, case: Path) -> None:
    session = read_session(_transcript(case), harness=harness)
    expected_file = case / "expected.json"
    got = _as_golden(session, case)
    if REGENERATE:
        expected_file.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert expected_file.is_file(), f"{expected_file} is missing: run with ASSAY_REGENERATE_GOLDENS=1 and review it"
    assert got == json.loads(expected_file.read_text(encoding="utf-8"))
    assert read_session(_transcript(case)) == session, "the harness guessed from the file reads the same session"


@pytest.mark.parametrize("harness,case", CASES, ids=CASE_IDS)
def test_only_its_own_adapter_recognises_the_file(harness: str, case: Path) -> None:
    claims = [name for name, adapter in CAPTURE_ADAPTERS.items() if adapter().sniff(_transcript(case))]
    assert claims == [harness]


@pytest.mark.parametrize("harness,case", CASES, ids=CASE_IDS)
def test_calls_are_paired_or_listed(harness: str, case: Path) -> None:
    session = read_session(_transcript(case), harness=harness)
    ids = [c.call_id for c in session.tool_calls]
    assert len(ids) == len(set(ids)), "a call id appears twice"
    unmatched = {c.call_id for c in session.tool_calls if c.status == "unmatched"}
    assert unmatched == set(session.capture.unmatched_calls)
    for call in session.tool_calls:
        assert (call.output is None) == (call.status == "unmatched"), call.call_id
        assert call.call_id in session.turns[call.turn].call_ids, f"{call.call_id} is not on its turn"
        assert session.turns[call.turn].role == "assistant"
        assert session.turns[call.turn].agent_id == call.agent_id
    assert not set(session.capture.orphan_results) & set(ids)
    answered = {i for t in session.turns if t.role != "assistant" for i in t.call_ids}
    assert answered <= set(ids) | set(session.capture.orphan_results)
    assert [t.index for t in session.turns] == list(range(len(session.turns)))
    assert {r.call_id for r in session.commands} <= set(ids)


@pytest.mark.parametrize("harness,case", CASES, ids=CASE_IDS)
def test_files_and_subagents_are_read_off_the_calls(harness: str, case: Path) -> None:
    session = read_session(_transcript(case), harness=harness)
    named = [s for c in session.tool_calls if c.status == "ok" for s in strings_of(c.input)]
    for path in (*session.files_written, *session.files_read):
        assert any(path in text for text in named), f"{path} is named by no successful call"
    assert len(set(session.files_written)) == len(session.files_written)
    marked = [path for c in session.tool_calls for path in c.writes]
    assert all(c.status == "ok" for c in session.tool_calls if c.writes), "a failed call marked as a write"
    if marked:
        assert set(marked) == set(session.files_written), "files written are the calls' own writes"
    assert session.cost_usd is None
    for sub in session.subagents:
        assert sub.turns == sum(1 for t in session.turns if t.agent_id == sub.agent_id)
        assert sub.tool_calls == sum(1 for c in session.tool_calls if c.agent_id == sub.agent_id)
        if sub.parent_call_id is not None:
            assert session.call(sub.parent_call_id).agent_id == sub.nested_in
    untraced = {s.agent_id for s in session.subagents if s.parent_call_id is None}
    assert set(session.capture.untraced_subagents) == untraced
    agents = {t.agent_id for t in session.turns} - {None}
    assert agents == {s.agent_id for s in session.subagents}


def _claude_tokens(session: Session) -> dict[str | None, dict[str, int]]:
    """Per agent, the last usage of each (message id, request id), summed: counted straight off the lines."""
    last: dict[tuple, dict] = {}
    for file in session.capture.files:
        for _, record in json_lines(Path(file)):
            if record is None or record.get("type") != "assistant":
                continue
            agent = record.get("agentId") if record.get("isSidechain") else None
            last[(agent, record["message"]["id"], record.get("requestId"))] = record["message"]["usage"]
    totals: dict[str | None, dict[str, int]] = {}
    for (agent, _, _), usage in last.items():
        total = totals.setdefault(agent, {"input": 0, "output": 0, "cache_creation": 0, "cache_read": 0,
                                          "responses": 0})
        total["input"] += usage["input_tokens"]
        total["output"] += usage["output_tokens"]
        total["cache_creation"] += usage["cache_creation_input_tokens"]
        total["cache_read"] += usage["cache_read_input_tokens"]
        total["responses"] += 1
    return totals


def _codex_tokens(session: Session) -> dict[str | None, dict[str, int]]:
    """The last running total the rollout reports (never a sum), as input + output; a fork's less the total its
    copy of the earlier rollout ends with (the copy is the lines stamped with the instant of the copied
    ``session_meta``, the file's second line, and the fork's own total goes on from it)."""
    records = [r for _, r in json_lines(Path(session.capture.files[0])) if r]
    copied_at = records[1].get("timestamp") if len(records) > 1 and records[1].get("type") == "session_meta" else None
    last = copied = 0
    for record in records:
        payload = record.get("payload") or {}
        if payload.get("type") == "token_count" and payload.get("info"):
            last = payload["info"]["total_token_usage"]["total_tokens"]
            copied = last if record.get("timestamp") == copied_at else copied
    return {None: {"total": last - copied}}


TOKEN_ORACLES: dict[str, Callable[[Session], dict[str | None, dict[str, int]]]] = {
    "claude-code": _claude_tokens, "codex": _codex_tokens}


@pytest.mark.parametrize("harness,case", CASES, ids=CASE_IDS)
def test_tokens_equal_the_deduplicated_count(harness: str, case: Path) -> None:
    session = read_session(_transcript(case), harness=harness)
    oracle = TOKEN_ORACLES[harness](session)
    by_agent = {None: session.tokens, **{s.agent_id: s.tokens for s in session.subagents}}
    assert set(oracle) <= set(by_agent)
    for agent, counted in oracle.items():
        tokens = by_agent[agent]
        fields = {k: getattr(tokens, k) for k in counted if k != "total"}
        assert fields == {k: v for k, v in counted.items() if k != "total"}, agent
        if "total" in counted:
            assert tokens.total == counted["total"]


def _install_claude(case: Path, session: Session, home: Path, layout: str) -> dict[str, str]:
    roots = {"home": home / ".claude", "config_dir": home / "elsewhere" / "claude-b",
             "xdg": home / ".config" / "claude"}
    environ = {"HOME": str(home)}
    if layout == "config_dir":
        environ["CLAUDE_CONFIG_DIR"] = f"{home / 'elsewhere' / 'claude-a'},{roots['config_dir']}"
    shutil.copytree(case, roots[layout] / "projects" / encode_cwd(session.cwd or ""), dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("expected.json"))
    return environ


def _install_codex(case: Path, session: Session, home: Path, layout: str) -> dict[str, str]:
    environ = {"HOME": str(home)}
    root = home / ".codex"
    if layout == "config_dir":
        root = home / "elsewhere" / "codex"
        environ["CODEX_HOME"] = str(root)
    day = root / "sessions" / (session.started_at.strftime("%Y/%m/%d") if session.started_at else "2026/01/01")
    day.mkdir(parents=True, exist_ok=True)
    shutil.copy(_transcript(case), day)
    return environ


INSTALLERS: dict[str, tuple[Callable[[Path, Session, Path, str], dict[str, str]], tuple[str, ...]]] = {
    "claude-code": (_install_claude, ("home", "config_dir", "xdg")), "codex": (_install_codex, ("home", "config_dir"))}
"""How to put a case where the harness keeps its transcripts, in each layout the harness uses."""


def _repo_path(cwd: str) -> PurePath:
    """A session's starting directory as a path of its own system (a drive-letter path is a Windows one)."""
    return PureWindowsPath(cwd) if is_windows_path(cwd) else Path(cwd)


def _find(repo: PurePath, environ: dict[str, str]) -> list:
    """:func:`find_sessions`; a Windows repository read on another system is given to each adapter as it is
    (``find_sessions`` makes a path absolute on this machine, which a drive-letter path is not here)."""
    if isinstance(repo, Path):
        return find_sessions(repo, environ)
    return [ref for adapter in CAPTURE_ADAPTERS.values() for ref in adapter().discover(Path(str(repo)), environ)]


@pytest.mark.parametrize("harness,case", CASES, ids=CASE_IDS)
def test_discovery_finds_the_session_for_its_repo_only(harness: str, case: Path, tmp_path: Path) -> None:
    session = read_session(_transcript(case), harness=harness)
    install, layouts = INSTALLERS[harness]
    assert session.cwd
    repo = _repo_path(session.cwd)
    for layout in layouts:
        home = tmp_path / layout
        environ = install(case, session, home, layout)
        found = _find(repo, environ)
        assert [(r.session_id, r.harness) for r in found] == [(session.session_id, harness)], layout
        ref = found[0]
        assert Path(ref.path).name == _transcript(case).name and Path(ref.path).is_relative_to(home)
        assert (ref.cwd, ref.started_at, ref.ended_at) == (session.cwd, session.started_at, session.ended_at)
        assert ref.first_prompt and "\n" not in ref.first_prompt
        assert read_session(Path(ref.path)).session_id == session.session_id
        assert _find(repo.parent, environ) == found, "a session inside the repo is the repo's"
        for other in (repo.parent / "other-app", type(repo)(f"{repo}-v2"), repo / "sub"):
            assert _find(other, environ) == [], f"{layout}: found for {other}"
        if isinstance(repo, Path):
            assert find_session(repo, session.session_id[:8], environ) == ref


def test_find_session_by_prefix_and_its_errors(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path)}
    for harness, case in CASES:
        session = read_session(_transcript(case), harness=harness)
        install, _ = INSTALLERS[harness]
        install(case, session, tmp_path, "home")
    repo = Path("/home/dev/acme-app")
    found = find_sessions(repo, environ)
    assert len(found) == sum(within(read_session(_transcript(c), harness=h).cwd, repo) for h, c in CASES)
    starts = [r.started_at for r in found]
    assert starts == sorted(starts, reverse=True), "newest first"
    assert {r.harness for r in found} == set(CAPTURE_ADAPTERS)
    ids = [r.session_id for r in found]
    first = ids[0]
    assert find_session(repo, first, environ).session_id == first
    shortest = next(n for n in range(1, len(first) + 1) if sum(i.startswith(first[:n]) for i in ids) == 1)
    assert find_session(repo, first[:shortest], environ).session_id == first
    shared = max((os.path.commonprefix([a, b]) for a in ids for b in ids if a < b), key=len)
    assert shared, "no two golden session ids share a prefix; give two of them one"
    with pytest.raises(AmbiguousError) as ambiguous:
        find_session(repo, shared, environ)
    assert all(i in str(ambiguous.value) for i in ids if i.startswith(shared))
    with pytest.raises(NotFoundError, match="no session 'zzz'"):
        find_session(repo, "zzz", environ)
    with pytest.raises(NotFoundError):
        find_session(Path("/home/dev/other-app"), first, environ)


def test_a_bad_harness_name_names_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError) as error:
        capture_adapter("no-such-harness")
    assert "no harness 'no-such-harness'" in str(error.value)
    assert all(name in str(error.value) for name in CAPTURE_ADAPTERS)
    harness, case = CASES[0]
    with pytest.raises(NotFoundError, match="no-such-harness"):
        read_session(_transcript(case), harness="no-such-harness")
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"title": "not a transcript"}\n')
    with pytest.raises(UsageError) as unknown:
        read_session(notes)
    assert all(name in str(unknown.value) for name in CAPTURE_ADAPTERS)
    with pytest.raises(NotFoundError):
        read_session(tmp_path / "missing.jsonl")


def test_a_project_directory_is_confirmed_by_the_cwd_its_files_record(tmp_path: Path) -> None:
    """The encoded directory name loses information (``acme-app-v2`` and ``acme/app/v2`` read alike), so a
    session counts for a repository only when the file's own ``cwd`` is in it."""
    case = _folder("claude-code") / "basic"
    misleading = tmp_path / ".claude" / "projects" / encode_cwd("/home/dev/acme-app-v2")
    shutil.copytree(case, misleading, ignore=shutil.ignore_patterns("expected.json"))
    environ = {"HOME": str(tmp_path)}
    assert find_sessions(Path("/home/dev/acme-app-v2"), environ) == []
    assert [r.cwd for r in find_sessions(Path("/home/dev/acme-app"), environ)] == ["/home/dev/acme-app"]
