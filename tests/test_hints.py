"""Every hint names a command or an option that exists.

A hint is any `assay ...` text in backticks in the package's strings (messages, help, docstrings) and in
the README, any `assay ...` line of the README's shell blocks, and any ``--option`` a string mentions. Each is checked
against the real command line (typer's click objects): commands and subcommands exist, options exist on
the command they are given to, and a command that takes no argument is given none.
"""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest
import typer

from assay.flows.cli import app

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "storage", "flows", "adapters", "transforms", "fakes")
COMMAND = re.compile(r"`+assay ([^`]+?)`+")
OPTION = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
# Options of other programs that a string mentions on purpose: `assay worker` starts
# `prefect worker start --pool P --type process`.
FOREIGN_OPTIONS: set[str] = {"type"}
# Modules that speak another program's command line: the coding-agent harnesses' run adapters and their fakes
# take those harnesses' flags (the scripted model server has a command line of its own); an exam's workspace
# is pinned, and its replays' worktrees made, with git's; an export reads git's diffs and writes a Dockerfile
# (apt-get, git apply).
FOREIGN_MODULES = ("fakes/harness", "flows/exam_workspace", "flows/exam_distil", "flows/exam_stale", "adapters/runners/worktree",
                   "adapters/runners/claude_code", "adapters/runners/codex", "fakes/model_", "flows/exam_export", "flows/exam_harbor")


def _text(node: ast.AST) -> str | None:
    """A string constant, or an f-string with each placeholder as ``X``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)
    return None


def _strings() -> list[tuple[str, str]]:
    """(where, text) of every string in the package's modules."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            inner = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
            for node in ast.walk(tree):
                if id(node) not in inner and (text := _text(node)) is not None:
                    found.append((f"{path.relative_to(ROOT)}:{node.lineno}", text))
    return found


def command_hints() -> list[tuple[str, str]]:
    hints = [(where, m.group(1)) for where, text in _strings() for m in COMMAND.finditer(text)]
    readme = (ROOT / "README.md").read_text().splitlines()
    hints += [(f"README.md:{n}", line.split("#")[0].strip()[len("assay "):])
              for n, line in enumerate(readme, start=1) if line.startswith("assay ")]
    hints += [(f"README.md:{n}", m.group(1)) for n, line in enumerate(readme, start=1) for m in COMMAND.finditer(line)]
    return hints


def option_mentions() -> list[tuple[str, str]]:
    return [(where, m.group(1)) for where, text in _strings() if not where.startswith(FOREIGN_MODULES)
            for m in OPTION.finditer(text)]


def _root():
    """The command line's click objects (typer's own copy of click: checked by duck type)."""
    return typer.main.get_command(app)


def _options(command) -> dict:
    return {name: p for p in command.params if p.param_type_name == "option" for name in p.opts + p.secondary_opts}


def _is_group(command) -> bool:
    return hasattr(command, "commands")


def problem(hint: str) -> str | None:
    """What is wrong with ``assay <hint>`` (None when nothing)."""
    synopsis = hint.replace("[", " ").replace("]", " ").replace("\\|", " ")  # `rescore S [--version N \| --spec F]`
    try:
        tokens = shlex.split(synopsis)
    except ValueError:
        tokens = synopsis.split()
    shell = {"&", "&&", "||", "|", ";"}  # what follows a README line's command is the shell's
    tokens = next((tokens[:i] for i, tok in enumerate(tokens) if tok in shell or tok.startswith(">")), tokens)
    command = _root()
    path, arguments = ["assay"], 0
    while tokens:
        token = tokens.pop(0)
        if token.startswith("-"):
            name = token.split("=", 1)[0]
            option = _options(command).get(name) or _options(_root()).get(name)
            if name == "--help":
                continue
            if option is None:
                return f"`{' '.join(path)}` has no option {name}"
            if not option.is_flag and "=" not in token and tokens:
                tokens.pop(0)  # its value
        elif _is_group(command) and arguments == 0:
            names = token.split("|")
            missing = [n for n in names if n not in command.commands]
            if missing:
                return f"`{' '.join(path)}` has no command {', '.join(missing)}"
            command = command.commands[names[0]]
            path.append(token)
        elif "|" in token:  # alternatives, `RUN|--suite S`: (one) argument or an option
            pieces = token.split("|")
            tokens[:0] = [p for p in pieces if not p.startswith("-")][:1] + [p for p in pieces if p.startswith("-")]
        else:
            arguments += 1
            takes = [p for p in command.params if p.param_type_name == "argument"]
            if not takes or (arguments > len(takes) and all(p.nargs == 1 for p in takes)):
                return f"`{' '.join(path)}` takes no argument {token!r}"
    return None


def all_options() -> set[str]:
    """Every option of every command (and the global ones), without the dashes."""
    found: set[str] = set()

    def walk(command) -> None:
        found.update(name.lstrip("-") for name in _options(command) if name.startswith("--"))
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(_root())
    return found | {"help"}


def test_every_assay_hint_names_a_command_and_options_that_exist() -> None:
    hints = command_hints()
    assert len(hints) > 30, hints  # the collector finds them
    wrong = [f"{where}: `assay {hint}`: {why}" for where, hint in hints if (why := problem(hint))]
    assert not wrong, "\n".join(wrong)


def test_every_option_a_string_mentions_exists() -> None:
    mentions = option_mentions()
    assert any(name == "suite" for _, name in mentions), mentions
    known = all_options() | FOREIGN_OPTIONS
    wrong = [f"{where}: --{name}" for where, name in mentions if name not in known]
    assert not wrong, "no command has these options:\n" + "\n".join(wrong)


@pytest.mark.parametrize(("hint", "why"), [
    ("suites", "`assay` has no command suites"),
    ("verdicts --run RUN", "`assay verdicts` has no option --run"),
    ("lake migrate|compact|tidy", "`assay lake` has no command tidy"),
    ("reap RUN", "`assay reap` takes no argument 'RUN'"),
    ("verdicts RUN|--team T", "`assay verdicts` has no option --team"),
    ("rescore S [--version N \\| --specs F]", "`assay rescore` has no option --specs"),
])
def test_the_checker_catches_a_hint_that_does_not_exist(hint: str, why: str) -> None:
    assert problem(hint) == why


@pytest.mark.parametrize("hint", [
    "run TEAM/SUITE", "--debug runs show RUN", "rescore SUITE --consumer C --spec FILE", "lake migrate|compact|vacuum",
    "ls criteria --suite X", "judge-agreement --help", "verdicts RUN --cases", "--version",
    "verdicts RUN|--suite S [--cases]", "rescore S --consumer C [--version N \\| --spec F] [--materialise]",
])
def test_the_checker_accepts_hints_that_exist(hint: str) -> None:
    assert problem(hint) is None
