"""A team's script for the fake vendors: ``assay fake-vendors --script FILE`` (schema ``assay.fake-script/v1``).

The file names the bundle it scripts and, per case of one of its teams, what the fakes do on that case:

- ``replies``: what the agent says (fake VAPI and ElevenLabs), one per caller line, in order; a reply is
  a string or ``{say, tool: {name, arguments?, result?, is_error?}}`` (the agent calls the tool first);
- ``evaluations``: the vendors' own verdicts, ``pass``/``fail``/``unknown``, by name: ElevenLabs' criteria
  for the case (``caller_goal``, ``told_1`` ... one per ``must_be_told`` item) and the Hamming assertions
  the suite's ``vendor.evaluation`` assertions name (by the assertion's key, its ``name`` or ``vendor_id``);
- ``judge``: our judge's verdict per ``rubric`` assertion key, ``pass``/``fail`` or ``{verdict, rationale}``.

``transcripts`` gives Hamming's transcript per persona (the case's caller, up to the first comma). Every
name is checked against the bundle: an unknown case, evaluation, assertion or persona is refused, naming
the file, the field and the valid values.

The fakes tell a case by the caller's first line: its first scripted ``turn``, else the line the caller
opens with from its ``wants`` (:func:`opening`). A case the script leaves out, or a bundle with no script
(``assay fake-vendors --bundle FILE``), is answered from its own situation: the agent's first reply tells
the caller everything they ``must_be_told``, every evaluation and rubric passes, and Hamming's transcript
is that conversation. :func:`steering` turns all this into each fake's ``faults.scripts``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.core.errors import AssayError

from assay.fakes.brain import LATER_REPLY

SCHEMA = "assay.fake-script/v1"
END_CALL = "[END_CALL]"
"""What our caller simulator's model says to hang up (:data:`assay.adapters.caller.END_TOKEN`)."""
GREETING = "Thank you for calling."
"""How the agent answered from a situation opens its first reply."""
_EVALUATION = {"pass": ("success", "PASSED"), "fail": ("failure", "FAILED"), "unknown": ("unknown", "ERROR")}
"""A scripted evaluation as ElevenLabs' criterion result and Hamming's assertion status."""
_CALLERS = {"caller", "customer", "user", "persona"}
"""Speakers of a Hamming transcript's caller lines."""


class ScriptError(AssayError, ValueError):
    """A fake-vendor script is malformed or names what its bundle lacks: the file, the field, what is allowed."""

    def __init__(self, file: str, problems: list[tuple[str, str]]):
        self.file, self.problems = file, problems
        super().__init__("\n".join(f"{file}: {where}: {what}" if where else f"{file}: {what}" for where, what in problems))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Strict):
    """A tool the agent calls before it speaks."""

    name: str = Field(min_length=1)
    """The tool's name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The arguments it is called with."""
    result: Any = Field(default_factory=lambda: {"ok": True})
    """What the tool returns (on ElevenLabs, a mocked tool returns its mock instead)."""
    is_error: bool = False
    """Whether the result is an error."""


class ReplyDef(_Strict):
    """One agent reply."""

    say: str
    """What the agent says."""
    tool: ToolCall | None = None
    """The tool it calls first, if any."""


class JudgeVerdict(_Strict):
    """What our judge answers about one rubric on this case."""

    verdict: Literal["pass", "fail"]
    rationale: str = ""


class CaseScript(_Strict):
    """What the fakes do on one case."""

    replies: list[str | ReplyDef] = Field(default_factory=list)
    """The agent's replies, one per caller line; once spent, it says goodbye."""
    evaluations: dict[str, Literal["pass", "fail", "unknown"]] = Field(default_factory=dict)
    """The vendors' own evaluations by name (ElevenLabs criteria, Hamming assertions)."""
    judge: dict[str, Literal["pass", "fail"] | JudgeVerdict] = Field(default_factory=dict)
    """Our judge's verdict per rubric assertion key."""


class Script(_Strict):
    """A whole script file."""

    schema_id: Literal["assay.fake-script/v1"] = Field(alias="schema")
    """The format and its version: ``assay.fake-script/v1``."""
    bundle: str = Field(min_length=1)
    """The bundle it scripts, relative to the script file."""
    team: str | None = None
    """The team whose cases it scripts (needed when the bundle has several teams)."""
    cases: dict[str, CaseScript] = Field(default_factory=dict)
    """Per case key: what the fakes do on it."""
    transcripts: dict[str, str] = Field(default_factory=dict)
    """Hamming's transcript per persona name, ``Agent: ...`` / ``Caller: ...`` lines."""


def opening(situation: Mapping[str, Any]) -> str:
    """The caller's first line, by which the fakes tell a case: its first scripted turn, else the line a
    fake caller opens with from what it wants (the line fake ElevenLabs' simulated user derives too)."""
    turns = situation.get("turns") or []
    return str(turns[0]).strip() if turns else f"Hi, I'm calling about this: {str(situation.get('wants', '')).strip()}"


def persona_name(situation: Mapping[str, Any]) -> str:
    """The persona Hamming reports a case's call under (as :func:`assay.adapters.hamming.persona` names it)."""
    return str(situation.get("caller") or "A caller").split(",", 1)[0].strip() or "A caller"


def load_script(path: str | Path) -> tuple[Script, Any]:
    """The script at ``path`` and the team of its bundle it scripts, checked against each other."""
    from assay.core.bundle import read_bundle

    file = str(path)
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ScriptError(file, [("", f"cannot read the script: {exc}")]) from None
    try:
        script = Script.model_validate(raw)
    except ValidationError as exc:
        raise ScriptError(file, [(".".join(map(str, e["loc"])), e["msg"]) for e in exc.errors(include_url=False)]) from None
    bundle = read_bundle(Path(path).parent / script.bundle)
    teams = {t.id: t for t in bundle.teams}
    if script.team is None and len(teams) != 1:
        raise ScriptError(file, [("team", f"the bundle has teams {sorted(teams)}; name one with 'team'")])
    team = teams.get(script.team) if script.team else next(iter(teams.values()))
    if team is None:
        raise ScriptError(file, [("team", f"unknown team {script.team!r}; valid teams: {', '.join(sorted(teams))}")])
    problems = _problems(script, team)
    if problems:
        raise ScriptError(file, problems)
    return script, team


def _unknown(what: str, name: str, valid: list[str]) -> str:
    from assay.core.names import nearest

    close = nearest(name, valid, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown {what} {name!r}; {hint}valid: {', '.join(sorted(valid)) or '(none)'}"


def _problems(script: Script, team: Any) -> list[tuple[str, str]]:
    cases = {c.key: c for c in team.cases}
    problems = [(f"cases.{key}", _unknown(f"case of team {team.id!r}", key, list(cases)))
                for key in script.cases if key not in cases]
    for key, own in script.cases.items():
        if key not in cases:
            continue
        evaluations, rubrics = _evaluations(team, cases[key]), _rubrics(team, cases[key])
        problems += [(f"cases.{key}.evaluations.{name}", _unknown(f"evaluation of case {key!r}", name, list(evaluations)))
                     for name in own.evaluations if name not in evaluations]
        problems += [(f"cases.{key}.judge.{name}", _unknown(f"rubric assertion of case {key!r}", name, list(rubrics)))
                     for name in own.judge if name not in rubrics]
    personas = sorted({persona_name(c.situation.model_dump()) for c in team.cases})
    problems += [(f"transcripts.{name}", _unknown("persona", name, personas))
                 for name in script.transcripts if name not in personas]
    seen: dict[str, str] = {}
    for case in team.cases:
        line = opening(case.situation.model_dump())
        if line in seen:
            problems.append(("cases", f"cases {seen[line]!r} and {case.key!r} open with the same caller line {line!r}: "
                                      "the fakes tell cases apart by it; give one of them a different first turn"))
        seen[line] = case.key
    return problems


def _assertions(team: Any, case: Any) -> list[Any]:
    """The assertions that run on ``case``: its own and those of every suite that selects it."""
    return [*case.assertions, *(a for s in team.suites if case.key in s.cases for a in s.assertions)]


def _evaluations(team: Any, case: Any) -> dict[str, str | None]:
    """Evaluation name -> the Hamming assertion id it stands for (None: an ElevenLabs criterion)."""
    situation = case.situation
    out: dict[str, str | None] = {"caller_goal": None} if situation.wants else {}
    out |= {f"told_{i}": None for i in range(1, len(situation.must_be_told) + 1)}
    for a in _assertions(team, case):
        if a.mechanism == "vendor.evaluation":
            vendor_id = a.params.get("vendor_id") or a.params["name"]
            out |= {a.key: vendor_id, a.params["name"]: vendor_id, vendor_id: vendor_id}
    return out


def _rubrics(team: Any, case: Any) -> dict[str, str]:
    return {a.key: a.params["rubric"] for a in _assertions(team, case) if a.mechanism == "rubric"}


def _told(situation: Mapping[str, Any]) -> str:
    facts = [str(f).strip() for f in situation.get("must_be_told") or []]
    return " ".join([GREETING, *(f if f.endswith((".", "!", "?")) else f + "." for f in facts)])


def _reply(said: str | ReplyDef) -> dict[str, Any]:
    if isinstance(said, str):
        return {"reply": said}
    out: dict[str, Any] = {"reply": said.say}
    if said.tool is not None:
        out |= {"tool": said.tool.name, "arguments": said.tool.arguments, "result": said.tool.result,
                "is_error": said.tool.is_error}
    return out


def _transcript(lines: list[str], replies: list[dict[str, Any]]) -> str:
    out = []
    for i, line in enumerate(lines):
        out.append(f"Caller: {line}")
        out.append(f"Agent: {replies[i]['reply'] if i < len(replies) else 'Goodbye!'}")
    return "\n".join(out)


def steering(teams: Sequence[Any], script: Script | None = None) -> dict[str, dict[str, Any]]:
    """Each fake's ``faults.scripts`` (by vendor) for the cases of ``teams``, as ``script`` says (else from
    each case's own situation)."""
    script = script or Script.model_validate({"schema": SCHEMA, "bundle": "-"})
    conversations, judge, callers = [], [], []
    transcripts: dict[str, str] = {}
    status: dict[str, dict[str, str]] = {}
    for team, case in ((t, c) for t in teams for c in t.cases):
        situation = case.situation.model_dump()
        own = script.cases.get(case.key, CaseScript())
        first = opening(situation)
        lines = [str(t).strip() for t in situation["turns"]] or [first]
        replies = [_reply(r) for r in own.replies] or (
            [{"reply": _told(situation)}] + [{"reply": LATER_REPLY}] * (len(lines) - 1))
        names = _evaluations(team, case)
        criteria = {n: _EVALUATION[v][0] for n, v in own.evaluations.items() if names[n] is None}
        conversations.append({"opening": first, "replies": replies, "criteria": criteria})
        persona = persona_name(situation)
        transcripts[persona] = script.transcripts.get(persona) or _transcript(lines, replies)
        status[persona] = {names[n]: _EVALUATION[v][1] for n, v in own.evaluations.items() if names[n] is not None}
        said = [first, *(_first_said(t) for t in [script.transcripts.get(persona)] if t)]
        who = "|".join(re.escape(s) for s in said if s)
        rubrics = _rubrics(team, case)
        for key, verdict in own.judge.items():
            answer = verdict.model_dump() if isinstance(verdict, JudgeVerdict) else {"verdict": verdict}
            answer.setdefault("rationale", "")
            answer["rationale"] = answer["rationale"] or f"Scripted: {key} {'holds' if answer['verdict'] == 'pass' else 'does not hold'}."
            judge.append({"match": f"(?=.*RUBRIC\\n{re.escape(rubrics[key].strip())})(?=.*(?:{who}))", "reply": answer})
        if not situation["turns"]:  # our caller simulator plays this caller: it opens, then hangs up
            wants = re.escape(f"What you want from this call: {situation['wants']}")
            callers += [{"match": f"{wants}.*{re.escape(first)}", "reply": END_CALL}, {"match": wants, "reply": first}]
    return {
        "vapi": {"conversations": conversations},
        "elevenlabs": {"conversations": conversations},
        "hamming": {"transcript": transcripts, "persona_status": status},
        "openai": {"rules": judge + callers},
    }


def _first_said(transcript: str) -> str:
    """The words of a transcript's first caller line, without its speaker ("" when it has none)."""
    said = (ln.split(":", 1) for ln in transcript.splitlines() if ":" in ln)
    return next((words.strip() for who, words in said if who.strip().lower() in _CALLERS), "")


def steer(fakes: Mapping[str, Any], plan: Mapping[str, Mapping[str, Any]]) -> None:
    """Set each running fake's scripts from :func:`steering`'s plan."""
    for vendor, scripts in plan.items():
        if vendor in fakes:
            with fakes[vendor].lock:
                fakes[vendor].faults.scripts.update(scripts)


__all__ = ["SCHEMA", "CaseScript", "Script", "ScriptError", "load_script", "opening", "persona_name", "steer", "steering"]
