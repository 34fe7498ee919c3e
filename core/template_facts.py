"""A team's facts (a YAML or JSON mapping of fact name to value) and the cases they make from templates.

:func:`read_facts` reads the file as safely as a bundle (size caps, no aliases, no repeated keys);
:func:`instantiate_all` checks that every placeholder of every template has a fact of its type (or a
default) and fills each template, or raises one :class:`~.errors.TemplateError` listing every problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .bundle_models import CaseDef
from .bundle_templates import TemplateDef, fits, type_name
from .errors import BundleError, TemplateError
from .names import listed, nearest


def read_facts(path: str | Path) -> dict[str, Any]:
    """The facts in ``path``: a mapping whose keys are placeholder names."""
    from .bundle import _parse_json, _parse_yaml
    from .bundle_input import InputLimits, InputProblem, read_capped, utf8

    file, path = str(path), Path(path)
    limits = InputLimits.from_settings()
    if path.suffix.lower() not in (".yaml", ".yml", ".json"):
        what = f"unknown extension {path.suffix or '(none)'!r}; a facts file is .yaml, .yml or .json"
        raise TemplateError(file, [what])
    try:
        text = utf8(read_capped(path, limits.max_bundle_bytes, "ASSAY_MAX_BUNDLE_BYTES"))
        raw = _parse_json(file, text) if path.suffix.lower() == ".json" else _parse_yaml(file, text, limits.max_nesting)
    except (InputProblem, FileNotFoundError, IsADirectoryError) as exc:
        raise TemplateError(file, [f"cannot read the team's facts: {exc}"]) from None
    except BundleError as exc:
        raise TemplateError(file, [what for _, what in exc.problems]) from None
    if not isinstance(raw, dict) or not all(isinstance(k, str) for k in raw):
        found = type(raw).__name__
        raise TemplateError(file, ["the team's facts are a mapping of fact name to value "
                                   f"(`service_zips: [\"60601\"]`); found {found}"])
    return raw


def instantiate_all(group: str, templates: list[TemplateDef], facts: dict[str, Any], file: str) -> list[CaseDef]:
    """One case per template, filled with ``facts``; every missing, ill-typed or unknown fact is one problem."""
    problems: list[str] = []
    declared = {name: t for t in templates for name in t.placeholders}
    for name in facts:
        if name not in declared:
            close = nearest(name, declared, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            problems.append(f"fact {name!r} is no placeholder of group {group!r}; {hint}its placeholders: "
                            f"{listed(sorted(declared), limit=20)} — rename or remove it")
    for template in templates:
        for name, p in template.placeholders.items():
            need = f"template {template.key!r} needs fact {name!r} ({p.type}: {p.description})"
            if name not in facts and p.default is None:
                problems.append(f"{need}; add `{name}:` to {file}")
            elif name in facts and not fits(p.type, facts[name]):
                problems.append(f"{need}, and {file} gives {type_name(facts[name])} ({_short(facts[name])}); "
                                f"write it as {_example(p.type)}")
    if problems:
        raise TemplateError(file, problems)
    cases = []
    for template in templates:
        try:
            cases.append(template.instantiate(facts))
        except ValidationError as exc:
            problems += [f"template {template.key!r} filled with these facts: {'.'.join(map(str, e['loc']))}: "
                         f"{e['msg'].removeprefix('Value error, ')}" for e in exc.errors(include_url=False)]
    if problems:
        raise TemplateError(file, problems)
    return cases


def _example(kind: str) -> str:
    return {"text": "text", "integer": "a whole number", "number": "a number", "boolean": "true or false",
            "text_list": 'a list of text (`["60601", "60602"]`)', "number_list": "a list of numbers (`[1, 2]`)"}[kind]


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["instantiate_all", "read_facts"]
