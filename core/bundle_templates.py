"""Templates (shareable recipes of a case) and template groups (starter packs), as a bundle declares them.

A template's ``case`` has the shape of a team's case (a title, a situation, case-level assertions)
without a key: the case a team gets is keyed by the template. ``{{name}}`` in it marks a team fact,
declared under ``placeholders`` with its type. A value that is exactly one placeholder becomes the
fact itself (a list stays a list, a number a number); a placeholder inside text becomes its text form
(a list as ``a, b, c``). :meth:`TemplateDef.instantiate` fills a template with a team's facts.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationError, model_validator

from .bundle_base import Identifier, Text, _Model
from .ids import content_hash

if TYPE_CHECKING:
    from .bundle_models import CaseDef

PlaceholderType = Literal["text", "integer", "number", "boolean", "text_list", "number_list"]
PLACEHOLDER_TYPES: tuple[str, ...] = ("text", "integer", "number", "boolean", "text_list", "number_list")

_PLACEHOLDER = re.compile(r"\{\{\s*([a-z0-9][a-z0-9_-]{0,63})\s*\}\}")
_SAMPLES: dict[str, Any] = {"text": "sample", "integer": 1, "number": 1, "boolean": True, "text_list": ["sample"],
                            "number_list": [1]}  # fmt: skip
"""A value of each type: a template without defaults is checked filled with these when it is loaded."""
_OWN_FIELDS = ("key", "source_recipe")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def fits(kind: str, value: Any) -> bool:
    """Whether ``value`` is a fact of type ``kind``."""
    if kind == "text":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return _is_number(value)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "text_list":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, list) and all(_is_number(v) for v in value)


def type_name(value: Any) -> str:
    """What a fact is, in this module's words (for messages)."""
    for kind in PLACEHOLDER_TYPES:
        if fits(kind, value):
            return "an empty list" if value == [] else kind
    return "a list of mixed values" if isinstance(value, list) else type(value).__name__


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    return str(value)


def substitute(body: Any, facts: dict[str, Any]) -> Any:
    """``body`` with every ``{{name}}`` replaced by ``facts[name]``: a whole value by the fact itself, a
    placeholder inside text by the fact's text form."""
    if isinstance(body, dict):
        return {k: substitute(v, facts) for k, v in body.items()}
    if isinstance(body, list):
        return [substitute(v, facts) for v in body]
    if isinstance(body, str):
        whole = _PLACEHOLDER.fullmatch(body.strip())
        if whole:
            return facts[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: _text(facts[m.group(1)]), body)
    return body


def placeholders_in(body: Any) -> set[str]:
    """The placeholder names ``body`` uses."""
    if isinstance(body, dict):
        return set().union(*(placeholders_in(v) for v in body.values()))
    if isinstance(body, list):
        return set().union(*(placeholders_in(v) for v in body))
    return set(_PLACEHOLDER.findall(body)) if isinstance(body, str) else set()


def _case_problem(err: Any) -> str:
    where = "case." + ".".join(str(p) for p in err["loc"])
    if err["type"] == "bad_params":  # the mechanism's own words for each parameter
        return "; ".join(f"{where}: {what}" for _, what in err["ctx"]["problems"])
    return f"{where}: {err['msg'].removeprefix('Value error, ')}"


class PlaceholderDef(_Model):
    """One team fact a template needs."""

    type: PlaceholderType
    """``text``, ``integer``, ``number``, ``boolean``, ``text_list`` (ZIP codes, job types) or ``number_list``."""
    description: Text
    """What the fact is, for the team that supplies it (``ZIP codes the team serves``)."""
    default: Any = None
    """The value when the team's facts leave it out; none: every team must supply it."""


class TemplateDef(_Model):
    """A shareable recipe of a case: the situation with the team's facts left as ``{{placeholders}}``."""

    key: Identifier
    """The template's key; the case a team gets from it has this key too."""
    title: Text
    """One line naming the recipe."""
    description: str = ""
    """What the recipe tests and when a team wants it."""
    placeholders: dict[Identifier, PlaceholderDef] = Field(default_factory=dict)
    """The team facts the case needs, by name (``service_zips``)."""
    case: dict[str, Any]
    """The case: ``title``, ``situation`` and ``assertions`` as a team's case has them (no ``key``), with
    ``{{name}}`` wherever a team fact goes."""

    @model_validator(mode="after")
    def _consistent(self) -> TemplateDef:
        used = placeholders_in(self.case)
        problems = [f"case field {f!r} is not allowed: the case's {f.replace('_', ' ')} is the template's key"
                    for f in _OWN_FIELDS if f in self.case]  # fmt: skip
        declared = ", ".join(self.placeholders) or "none"
        problems += [f"{{{{{name}}}}} is used in the case but not declared under `placeholders` (declared: "
                     f"{declared}); declare it with its type and description"
                     for name in sorted(used - set(self.placeholders))]
        problems += [f"placeholder {name!r} is declared but the case never uses it; use it as {{{{{name}}}}} or "
                     f"remove it" for name in self.placeholders if name not in used]
        problems += [f"placeholder {name!r}: its default {p.default!r} is {type_name(p.default)}, not {p.type}"
                     for name, p in self.placeholders.items() if p.default is not None and not fits(p.type, p.default)]
        if not problems:
            sample = {n: p.default if p.default is not None else _SAMPLES[p.type] for n, p in self.placeholders.items()}
            try:
                self.instantiate(sample)
            except ValidationError as exc:
                problems += [_case_problem(e) for e in exc.errors(include_url=False)]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def facts_with_defaults(self, facts: dict[str, Any]) -> dict[str, Any]:
        """The facts this template reads: the team's, else the placeholder's default."""
        return {n: facts[n] if n in facts else p.default for n, p in self.placeholders.items()}

    def instantiate(self, facts: dict[str, Any]) -> CaseDef:
        """The team's case: the template's case with ``facts`` in it; raises pydantic's ``ValidationError``."""
        from .bundle_models import CaseDef

        body = substitute(self.case, self.facts_with_defaults(facts))
        return CaseDef.model_validate({"key": self.key, "source_recipe": self.key, **body})

    def stored(self) -> dict[str, Any]:
        """What the catalog stores and hashes."""
        return self.model_dump(mode="json", exclude={"key"})

    @property
    def content_hash(self) -> str:
        return content_hash(self.stored())


class TemplateGroupDef(_Model):
    """A starter pack: the templates a new team starts from."""

    key: Identifier
    """The group's key (``assay template apply GROUP``)."""
    title: Text
    """One line naming the pack."""
    templates: list[Identifier] = Field(min_length=1)
    """Keys of templates (in this bundle or already loaded), in the order their cases are made."""

    @model_validator(mode="after")
    def _once(self) -> TemplateGroupDef:
        twice = sorted({k for k in self.templates if self.templates.count(k) > 1})
        if twice:
            raise ValueError(f"template(s) {', '.join(map(repr, twice))} listed twice; list each template once")
        return self


def template_problems(raw: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """Template and group keys repeated in one bundle."""
    problems = []
    for section in ("templates", "template_groups"):
        seen: dict[str, int] = {}
        items = raw.get(section)
        for i, item in enumerate(items if isinstance(items, list) else []):
            key = item.get("key") if isinstance(item, dict) else None
            if isinstance(key, str) and key in seen:
                what = section[:-1].replace("_", " ")
                first = f"{section}[{seen[key]}]"
                problems.append(((section, i, "key"), f"duplicate {what} key {key!r} (first at {first}); "
                                 f"each {what} appears once"))
            elif isinstance(key, str):
                seen[key] = i
    return problems


__all__ = [
    "PLACEHOLDER_TYPES", "PlaceholderDef", "TemplateDef", "TemplateGroupDef", "fits", "placeholders_in", "substitute",
    "template_problems", "type_name",
]  # fmt: skip
