"""A stand-in for a headless coding-agent harness (``claude -p``), run as ``python -m assay.fakes.harness``.

It takes the real CLI's flags, does real work in its working directory (reads and edits files, runs
commands with bash), prints the real stream-json events and writes a real session transcript
(:mod:`assay.fakes.harness_events`), so a replay can be tested end to end without a model.

What it does comes from a **playbook**, a TOML file at ``$ASSAY_FAKE_HARNESS_PLAYBOOK`` or else
``.fake-harness/playbook.toml`` in the working directory::

    [[good]]                       # the steps of a good session, in order
    say = "Let me read the code."  # optional text the response starts with
    read = "pricing.py"            # at most one action: read | edit | write | run
    [[good]]
    edit = { path = "pricing.py", old = "HALF_EVEN", new = "HALF_UP" }   # replace_all = true optional
    [[good]]
    run = "python -m pytest -q"
    [[good]]
    say = "Fixed."                 # a step with only `say` is a text answer
    [[regressed]]                  # optional: the steps of a session that went wrong
    ...

``write = { path, content }`` creates or overwrites a file. Paths are relative to the working directory.

How it behaves comes from ``$ASSAY_FAKE_HARNESS_MODE``:

- ``good`` (default): follow the good steps;
- ``regress:P`` / ``flaky:P``: follow the regressed steps in a share P of replays. With
  ``$ASSAY_FAKE_HARNESS_STATE`` naming a folder, replays are counted there (under a file lock) and replay k
  (from 0) regresses when ``floor((k+1)·P) > floor(k·P)`` — exactly P of them, spread evenly; each replay
  appends ``{"replay", "session_id", "steps"}`` to ``replays.jsonl`` there. Without it, a random draw seeded
  from ``$ASSAY_FAKE_HARNESS_SEED`` (default 0) and the session id decides;
- ``crash`` / ``crash-after:N``: die after the first (N-th) step: exit 1, a stack trace on stderr, no result;
- ``overrun``: repeat the good steps' tool calls until ``--max-budget-usd`` or ``--max-turns`` stops the
  session (after 200 turns without either);
- ``api-error``: the second model call fails; the result says ``success`` with ``is_error: true``.

``--max-turns`` and ``--max-budget-usd`` hold in every mode. ``$ASSAY_FAKE_HARNESS_VERSION`` sets the version
reported (default 2.1.3); ``$ASSAY_FAKE_HARNESS_DELAY`` adds seconds of "model time" per response.
"""

from __future__ import annotations

import argparse
import fcntl
import itertools
import json
import math
import os
import random
import subprocess
import sys
import time
import tomllib
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, NoReturn

from .harness_events import (JSON_SEPARATORS, SYSTEM_PROMPT_TOKENS, Meter, Recorder, Usage, new_tool_use_id,
                             resolve_model, result_event, tokens_of, transcript_path)
from .harness_tools import (PERMISSION_MODES, Permissions, ToolOutcome, UsageError, Workspace, mcp_servers,
                            no_such_tool, split_tool_list)

DEFAULT_TOOLS = ["Task", "Bash", "Glob", "Grep", "ExitPlanMode", "Read", "Edit", "Write", "NotebookEdit", "WebFetch",
                 "TodoWrite", "WebSearch", "BashOutput", "KillShell", "Skill", "SlashCommand"]
"""The tools a session has when ``--tools`` is not given."""
ACTIONS = {"read": "Read", "edit": "Edit", "write": "Write", "run": "Bash"}
"""Playbook action keys and the tool each one calls."""
OVERRUN_CEILING = 200
"""Turns after which an ``overrun`` session with no cap stops anyway."""
API_ERROR_TEXT = ('API Error: 500 {"type":"error","error":{"type":"api_error","message":"Internal server error"},'
                  '"request_id":null}')
CRASH_TRACE = """file:///usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js:4187
        throw new TypeError(`Cannot read properties of undefined (reading 'content')`);
        ^

TypeError: Cannot read properties of undefined (reading 'content')
    at normalizeToolResult (file:///usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js:4187:15)
    at async runTurn (file:///usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js:3990:5)
    at async main (file:///usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js:5120:3)

Node.js v22.11.0
"""


@dataclass(frozen=True)
class Step:
    """One playbook step: optional text, then at most one tool call."""

    say: str | None
    action: str | None
    """``read``, ``edit``, ``write`` or ``run``; None for a text-only step."""
    argument: Any = None


def load_playbook(path: Path) -> dict[str, list[Step]]:
    """The playbook's ``good`` and ``regressed`` steps; UsageError naming the step and the allowed keys."""
    if not path.is_file():
        raise UsageError(f"no playbook at {path} (set ASSAY_FAKE_HARNESS_PLAYBOOK or add .fake-harness/playbook.toml)")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as bad:
        raise UsageError(f"playbook {path} is not TOML: {bad}") from bad
    unknown = set(data) - {"good", "regressed"}
    if unknown or not data.get("good"):
        raise UsageError(f"playbook {path} needs [[good]] steps and allows only good, regressed; got {sorted(data)}")
    return {flavour: [_step(path, flavour, index, raw) for index, raw in enumerate(data.get(flavour, []))]
            for flavour in ("good", "regressed")}


def _step(path: Path, flavour: str, index: int, raw: dict[str, Any]) -> Step:
    where = f"playbook {path}: {flavour}[{index}]"
    keys = set(raw)
    actions = sorted(keys & set(ACTIONS))
    if keys - {"say", *ACTIONS} or len(actions) > 1 or not keys:
        raise UsageError(f"{where} has keys {sorted(keys)}; a step has `say` and at most one of {sorted(ACTIONS)}")
    action = actions[0] if actions else None
    argument = raw.get(action) if action else None
    needed = {"edit": {"path", "old", "new"}, "write": {"path", "content"}}.get(action or "")
    if needed and not (isinstance(argument, dict) and needed <= set(argument) <= needed | {"replace_all"}):
        raise UsageError(f"{where}: {action} needs a table with {sorted(needed)}")
    if action in ("read", "run") and not isinstance(argument, str) or not isinstance(raw.get("say", ""), str):
        raise UsageError(f"{where}: `say`, `read` and `run` take a string")
    return Step(say=raw.get("say"), action=action, argument=argument)


@dataclass(frozen=True)
class Mode:
    """How the session behaves (see the module docstring)."""

    name: str
    share: Fraction = Fraction(0)
    """For ``regress`` and ``flaky``: the share of replays that follow the regressed steps."""
    crash_after: int | None = None


def parse_mode(text: str) -> Mode:
    """The mode named by ``$ASSAY_FAKE_HARNESS_MODE``; UsageError listing the valid forms."""
    name, _, value = text.strip().partition(":")
    try:
        if name in ("good", "overrun", "api-error") and not value:
            return Mode(name)
        if name == "crash" and not value:
            return Mode(name, crash_after=1)
        if name in ("regress", "flaky") and 0 <= Fraction(value) <= 1:
            return Mode(name, share=Fraction(value))
        if name == "crash-after" and int(value) >= 0:
            return Mode("crash", crash_after=int(value))
    except (ValueError, ZeroDivisionError):
        pass
    raise UsageError(f"ASSAY_FAKE_HARNESS_MODE={text!r} is not one of good, regress:P, flaky:P (0 <= P <= 1), "
                     "crash, crash-after:N, overrun, api-error")


def claim_replay(state_dir: Path) -> int:
    """The next replay number (from 0), counted in ``state_dir`` under a file lock so parallel replays agree."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with (state_dir / "replays.lock").open("a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        counter = state_dir / "replays.count"
        number = int(counter.read_text() or 0) if counter.exists() else 0
        counter.write_text(str(number + 1))
        return number


def follows_regressed(mode: Mode, environ: Mapping[str, str], session_id: str) -> tuple[bool, int | None]:
    """Whether this replay follows the regressed steps, and its replay number when a state folder counts them."""
    if mode.name not in ("regress", "flaky"):
        return False, None
    state = environ.get("ASSAY_FAKE_HARNESS_STATE")
    if state:
        number = claim_replay(Path(state))
        return math.floor((number + 1) * mode.share) > math.floor(number * mode.share), number
    draw = random.Random(f"{environ.get('ASSAY_FAKE_HARNESS_SEED', '0')}:{session_id}").random()
    return draw < mode.share, None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="claude", add_help=False, allow_abbrev=False)
    add = parser.add_argument
    add("prompt", nargs="?")
    add("-p", "--print", action="store_true", dest="print_mode")
    add("-v", "--version", action="store_true")
    add("--output-format", choices=("text", "json", "stream-json"), default="text")
    add("--verbose", action="store_true")
    add("--model")
    add("--max-turns", type=int)
    add("--max-budget-usd", type=float)
    add("--tools", action="append")
    add("--allowedTools", "--allowed-tools", action="append", dest="allowed")
    add("--disallowedTools", "--disallowed-tools", action="append", dest="disallowed")
    add("--strict-mcp-config", action="store_true")
    add("--mcp-config", action="append", default=[])
    add("--permission-mode", choices=PERMISSION_MODES)
    add("--dangerously-skip-permissions", action="store_true")
    add("--session-id")
    add("--append-system-prompt", default="")
    add("--add-dir", action="append", default=[])
    add("--settings")
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line, like the real CLI parses it; UsageError for an unknown option or a bad value."""
    options, extra = _parser().parse_known_args(argv)
    for word in extra:
        raise UsageError(f"unknown option '{word}'" if word.startswith("-") else "too many arguments")
    return options


def git_branch(cwd: Path) -> str:
    """The checked-out branch (``HEAD`` when detached), or '' outside a git repository."""
    try:
        done = subprocess.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=cwd, capture_output=True, text=True)
    except OSError:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


class Session:
    """One headless session: follows steps, runs tools, counts turns and cost, and stops at the caps."""

    def __init__(self, options: argparse.Namespace, recorder: Recorder, meter: Meter, tools: list[str],
                 rules: Permissions, workspace: Workspace, delay: float) -> None:
        self.options, self.recorder, self.meter = options, recorder, meter
        self.tools, self.rules, self.workspace, self.delay = tools, rules, workspace, delay
        self.denials: list[dict[str, Any]] = []

    def run(self, steps: Iterable[Step], mode: Mode) -> tuple[str, bool, list[str]]:
        """Follow ``steps``; returns the result's subtype, is_error and errors."""
        max_turns, budget = self.options.max_turns, self.options.max_budget_usd
        for index, step in enumerate(steps):
            if mode.crash_after is not None and index == mode.crash_after:
                sys.stderr.write(CRASH_TRACE)
                raise SystemExit(1)
            if max_turns is not None and self.meter.turns >= max_turns:
                return "error_max_turns", False, [f"Reached maximum number of turns ({max_turns})"]
            if budget is not None and self.meter.cost > budget:
                return "error_max_budget_usd", False, [f"Reached maximum budget (${budget})"]
            if mode.name == "overrun" and self.meter.turns >= OVERRUN_CEILING:
                return "error_max_turns", False, [f"Reached maximum number of turns ({OVERRUN_CEILING})"]
            if mode.name == "api-error" and index == 1:
                self.recorder.model_call(self.delay)
                self.recorder.respond([{"type": "text", "text": API_ERROR_TEXT}], Usage(), synthetic=True)
                return "success", True, []
            self.turn(step)
        return "success", False, []

    def turn(self, step: Step) -> None:
        """One model response (text, a tool call or both) and, for a tool call, its result."""
        blocks: list[dict[str, Any]] = [{"type": "text", "text": step.say}] if step.say else []
        call = self.tool_call(step) if step.action else None
        if call:
            blocks.append(call)
        self.recorder.model_call(self.delay)
        self.recorder.respond(blocks, self.meter.respond(json.dumps(blocks)))
        if call:
            outcome = self.execute(call)
            self.recorder.tool_result(call["id"], outcome.content, is_error=outcome.is_error,
                                      structured=outcome.structured)
            self.meter.add_context(outcome.content)

    def tool_call(self, step: Step) -> dict[str, Any]:
        """The ``tool_use`` block for a step's action, with the real tool's input field names."""
        argument = step.argument
        if step.action == "run":
            tool_input: dict[str, Any] = {"command": argument}
        elif step.action == "read":
            tool_input = {"file_path": str(self.workspace.path(argument))}
        elif step.action == "write":
            tool_input = {"file_path": str(self.workspace.path(argument["path"])), "content": argument["content"]}
        else:
            tool_input = {"file_path": str(self.workspace.path(argument["path"])), "old_string": argument["old"],
                          "new_string": argument["new"]}
            if argument.get("replace_all"):
                tool_input["replace_all"] = True
        return {"type": "tool_use", "id": new_tool_use_id(), "name": ACTIONS[str(step.action)], "input": tool_input}

    def execute(self, call: dict[str, Any]) -> ToolOutcome:
        """Run one tool call, unless the session lacks the tool or the rules refuse it."""
        name, tool_input = call["name"], call["input"]
        if name not in self.tools:
            return no_such_tool(name)
        target = tool_input.get("command") or tool_input["file_path"]
        allowed, refusal = self.rules.allows(name, target, self.workspace.cwd)
        if not allowed:
            self.denials.append({"tool_name": name, "tool_use_id": call["id"], "tool_input": tool_input})
            return ToolOutcome(refusal, True, f"Error: {refusal}")
        if name == "Bash":
            return self.workspace.bash(target)
        path = Path(target)
        if name == "Read":
            return self.workspace.read(path)
        if name == "Write":
            return self.workspace.write(path, tool_input["content"])
        return self.workspace.edit(path, tool_input["old_string"], tool_input["new_string"],
                                   bool(tool_input.get("replace_all")))


def _session_id(options: argparse.Namespace) -> str:
    if options.session_id is None:
        return str(uuid.uuid4())
    try:
        return str(uuid.UUID(options.session_id))
    except ValueError:
        raise UsageError("Invalid session ID. Must be a valid UUID.") from None


def run(options: argparse.Namespace, environ: Mapping[str, str], stdin_text: str | None) -> int:
    """Run one headless session; returns the exit status (0 only for a successful result)."""
    version = environ.get("ASSAY_FAKE_HARNESS_VERSION", "2.1.3")
    if options.version:
        print(f"{version} (Claude Code)")
        return 0
    if not options.print_mode:
        raise UsageError("this stand-in runs only headless: pass -p/--print")
    if options.output_format == "stream-json" and not options.verbose:
        raise UsageError("When using --print, --output-format=stream-json requires --verbose")
    prompt = options.prompt if options.prompt is not None else (stdin_text or "")
    if not prompt.strip():
        raise UsageError("Input must be provided either through stdin or as a prompt argument when using --print")
    cwd = Path.cwd().resolve()
    session_id = _session_id(options)
    transcript = transcript_path(environ, str(cwd), session_id)
    if transcript.exists():
        raise UsageError(f"Session ID {session_id} is already in use.")
    mode = parse_mode(environ.get("ASSAY_FAKE_HARNESS_MODE", "good"))
    playbook = load_playbook(Path(environ.get("ASSAY_FAKE_HARNESS_PLAYBOOK") or cwd / ".fake-harness/playbook.toml"))
    rules = Permissions.from_flags(options, cwd)
    servers = mcp_servers(options.mcp_config, options.strict_mcp_config, cwd)
    regressed, number = follows_regressed(mode, environ, session_id)
    if regressed and not playbook["regressed"]:
        raise UsageError(f"mode {mode.name} chose the regressed steps but the playbook has no [[regressed]] steps")
    flavour = "regressed" if regressed else "good"
    if number is not None:
        with (Path(environ["ASSAY_FAKE_HARNESS_STATE"]) / "replays.jsonl").open("a") as log:
            log.write(json.dumps({"replay": number, "session_id": session_id, "steps": flavour}) + "\n")
    offered = split_tool_list(options.tools) if options.tools is not None else DEFAULT_TOOLS
    tools = [name for name in (DEFAULT_TOOLS if offered == ["default"] else offered)
             if name not in rules.removed_tools()]
    model = resolve_model(options.model)
    recorder = Recorder(session_id=session_id, cwd=str(cwd), model=model, version=version, git_branch=git_branch(cwd),
                        transcript=transcript, out=sys.stdout, stream=options.output_format == "stream-json")
    meter = Meter(model=model, pending_context=SYSTEM_PROMPT_TOKENS + tokens_of(options.append_system_prompt)
                  + tokens_of(prompt))
    started = time.monotonic()
    recorder.init(tools=tools, mcp_servers=servers, permission_mode=rules.mode,
                  api_key_source="ANTHROPIC_API_KEY" if environ.get("ANTHROPIC_API_KEY") else "none")
    recorder.ask(prompt)
    session = Session(options, recorder, meter, tools, rules, Workspace(cwd),
                      float(environ.get("ASSAY_FAKE_HARNESS_DELAY", "0") or 0))
    steps: Iterable[Step] = playbook[flavour]
    if mode.name == "overrun":
        steps = itertools.cycle([step for step in playbook["good"] if step.action] or playbook["good"])
    subtype, is_error, errors = session.run(steps, mode)
    event = result_event(recorder, meter, subtype=subtype, is_error=is_error, started=started,
                         denials=session.denials, errors=errors)
    if options.output_format == "stream-json":
        recorder.emit(event)
    elif options.output_format == "json":
        print(json.dumps(event, separators=JSON_SEPARATORS))
    elif subtype == "success":
        print(event["result"])
    else:
        print(f"Error: {errors[0]}", file=sys.stderr)
    return 1 if is_error or subtype != "success" else 0


def main() -> None:
    """The command-line entry point: ``python -m assay.fakes.harness -p PROMPT [flags]``."""
    try:
        options = parse_args(sys.argv[1:])
        from_stdin = options.print_mode and options.prompt is None and not sys.stdin.isatty()
        status = run(options, os.environ, sys.stdin.read() if from_stdin else None)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        status = 1
    sys.exit(status)


if __name__ == "__main__":
    main()
