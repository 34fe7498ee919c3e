"""The bundle rules pydantic cannot see, and pydantic's own errors turned into located problems.

Each problem is a (location, message) pair; :func:`.bundle.validate_bundle` gathers them all and
raises one :class:`~.errors.BundleError`.
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ValidationError,
)

from .bundle_input import InputLimits, InputProblem
from .bundle_targets import check_call_set, exam_target, read_config, target_path
from .criteria import CriteriaSpec, did_you_mean
from .suite_runners import declared_problems

from .bundle_models import (
    _ADD_OR_REMOVE,
    _IGNORED,
    _OWN_CASES,
    VENDOR_KEYS,
    VENDOR_NAMES,
    VENDOR_SHAPES,
    Bundle,
    Location,
    ResolvedTarget,
    SuiteDef,
    TargetDef,
    _short,
)

# --- the rules pydantic cannot see ---------------------------------------------------------------


def _is_vendor_key(key: str, keys: frozenset[str] = VENDOR_KEYS) -> bool:
    if re.sub(r"[^a-z0-9]", "", key.lower()) in keys:
        return True
    words = [w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", key)]
    joined = {a + b for a, b in zip(words, words[1:])}
    return bool(VENDOR_NAMES & (set(words) | joined))


def vendor_problems(raw: dict[str, Any]) -> dict[Location, str]:
    """Keys naming a vendor mechanism: the definition's structure is guarded, its facts are not.

    The keys of a case, its situation, a suite and its target are refused when they name how a test
    runs (:data:`VENDOR_KEYS`). The situation's ``world`` is facts, searched at any depth for a
    vendor's request fields and names only (:data:`VENDOR_SHAPES`, :data:`VENDOR_NAMES`): an
    equipment ``model`` or a caller's ``phone_number`` there is a fact, not a mechanism.
    """
    found: dict[Location, str] = {}

    def scan(obj: Any, loc: Location, owner: str, keys: frozenset[str] = VENDOR_KEYS, deep: bool = False) -> None:
        if isinstance(obj, list) and deep:
            for i, item in enumerate(obj):
                scan(item, (*loc, i), owner, keys, deep)
        if not isinstance(obj, dict):
            return
        for key, value in obj.items():
            if isinstance(key, str) and _is_vendor_key(key, keys):
                found[(*loc, key)] = (
                    f"{key!r} is a vendor mechanism; {owner}, never how it runs — remove it "
                    "(the runner is chosen at run time: assay run --runner)"
                )
            elif deep:
                scan(value, (*loc, key), owner, keys, deep)

    def scan_case(case: dict[str, Any], loc: Location) -> None:
        scan(case, loc, "a case names a situation")
        situation = case.get("situation")
        scan(situation, (*loc, "situation"), "a case names a situation")
        if isinstance(situation, dict):
            scan(situation.get("world"), (*loc, "situation", "world"), "the world holds the situation's facts",
                 VENDOR_SHAPES, deep=True)

    for i, template in _dicts(raw.get("templates")):  # a template's case is a case
        if isinstance(template.get("case"), dict):
            scan_case(template["case"], ("templates", i, "case"))
    for ti, team in _dicts(raw.get("teams")):
        for ci, case in _dicts(team.get("cases")):
            scan_case(case, ("teams", ti, "cases", ci))
        for si, suite in _dicts(team.get("suites")):
            loc = ("teams", ti, "suites", si)
            scan(suite, loc, "a suite names its cases and its target")
            scan(suite.get("target"), (*loc, "target"), "a target is a compiled config, a call set or an exam")
    return found


@dataclass
class _SuiteView:
    """What the cross-checks need of one suite, taken from the file even when the suite is broken."""

    index: int
    key: Any
    cases: list[tuple[int, str]]
    assertions: list[tuple[int, str]]
    criteria: dict[str, CriteriaSpec]
    """The criteria specs that validate on their own."""
    target: TargetDef | None
    model: SuiteDef | None
    """The validated suite, when the whole bundle validated (its target is resolved onto it)."""


def _suite_views(raw: Any, models: list[SuiteDef] | None) -> list[_SuiteView]:
    views = []
    for si, suite in _dicts(raw):
        criteria = list(suite["criteria"].items()) if isinstance(suite.get("criteria"), dict) else []
        specs = dict(_valid_items(criteria, CriteriaSpec, keyed=True))
        target = dict(_valid_items([suite.get("target")], TargetDef)).get(0)
        cases = suite.get("cases") if isinstance(suite.get("cases"), list) else []
        keys = [(i, k) for i, k in enumerate(cases) if isinstance(k, str)]
        model = models[si] if models else None
        views.append(_SuiteView(si, suite.get("key"), keys, _keyed(suite.get("assertions")), specs, target, model))
    return views


def consistency_problems(raw: dict[str, Any], bundle: Bundle | None) -> tuple[list[tuple[Location, str]], list]:
    """Duplicates and cross-references; returns the problems and every suite view (for the targets)."""
    consumers = [(("consumers", i, "key"), k) for i, k in _keyed(raw.get("consumers"))]
    problems = _duplicates(consumers, "consumer key", "in the bundle")
    team_ids = [(("teams", i, "id"), t["id"]) for i, t in _dicts(raw.get("teams")) if isinstance(t.get("id"), str)]
    problems += _duplicates(team_ids, "team id", "in the bundle")
    all_suites = []
    for ti, team in _dicts(raw.get("teams")):
        at: Location = ("teams", ti)
        team_id = team.get("id")
        cases = [(ci, key, _keyed(case.get("assertions"))) for ci, key, case in _keyed_dicts(team.get("cases"))]
        suites = _suite_views(team.get("suites"), bundle.teams[ti].suites if bundle else None)
        all_suites += [(ti, s) for s in suites]
        case_keys = [((*at, "cases", i, "key"), k) for i, k, _ in cases]
        problems += _duplicates(case_keys, "case key", f"in team {team_id!r}")
        suite_keys = [((*at, "suites", s.index, "key"), s.key) for s in suites if isinstance(s.key, str)]
        problems += _duplicates(suite_keys, "suite key", f"in team {team_id!r}")
        case_assertions: dict[str, set[str]] = {}
        for ci, key, assertions in cases:
            locs = [((*at, "cases", ci, "assertions", i, "key"), k) for i, k in assertions]
            problems += _duplicates(locs, "assertion key", f"on case {key!r}")
            case_assertions.setdefault(key, set()).update(k for _, k in assertions)
        for suite in suites:
            sat = (*at, "suites", suite.index)
            problems += _duplicates(
                [((*sat, "cases", i), k) for i, k in suite.cases], "case", f"in suite {suite.key!r}"
            )
            locs = [((*sat, "assertions", i, "key"), k) for i, k in suite.assertions]
            problems += _duplicates(locs, "assertion key", f"on suite {suite.key!r}")
            known = ", ".join(case_assertions) or "none"
            for i, key in suite.cases:
                if key not in case_assertions:
                    why = f"{key!r} is not a case of team {team_id!r} (its cases: {known}); {_OWN_CASES}"
                    problems.append(((*sat, "cases", i), why))
            keys = {k for _, k in suite.assertions}.union(*(case_assertions.get(k, set()) for _, k in suite.cases))
            for consumer, spec in suite.criteria.items():
                problems += _criteria_problems((*sat, "criteria", consumer), suite.key, consumer, spec, keys)
            if suite.model is not None and suite.model.runners:
                found = declared_problems(suite.model.runners, suite.model.target.kind)
                problems += [((*sat, "runners", i), why) for i, why in found]
    return problems, all_suites


def _criteria_problems(
    at: Location, suite: str, consumer: str, spec: CriteriaSpec, keys: set[str]
) -> list[tuple[Location, str]]:
    problems: list[tuple[Location, str]] = []
    if not spec.required and not spec.threshold:
        why = f"criteria for {consumer!r} names no required key and no threshold group, so it could never fail"
        problems.append((at, f"{why}; add `required` or `threshold`"))
    named: list[tuple[Location, str]] = [((*at, "required", i), k) for i, k in enumerate(spec.required)]
    named += [((*at, "ignore", i), k) for i, k in enumerate(spec.ignore)]
    for g, group in enumerate(spec.threshold):
        group_keys = [((*at, "threshold", g, "keys", i), k) for i, k in enumerate(group.keys)]
        problems += _duplicates(group_keys, "key", f"in threshold group {g}")
        named += group_keys
    problems += _duplicates([n for n in named if n[0][-2] == "required"], "key", "in required")
    problems += _duplicates([n for n in named if n[0][-2] == "ignore"], "key", "in ignore")
    grouped = {k for g in spec.threshold for k in g.keys}
    known = ", ".join(sorted(keys)) or "none"
    for loc, key in named:
        if key not in keys:
            why = f"{key!r}{did_you_mean(key, keys)} matches no assertion of suite {suite!r} (its assertion keys: {known})"
            problems.append((loc, f"{why}; {_ADD_OR_REMOVE}"))
        elif loc[-2] == "ignore" and key in grouped:
            problems.append((loc, f"{key!r} is both ignored and counted in a threshold group; {_IGNORED}"))
    return problems


def _duplicates(items: list[tuple[Location, str]], what: str, scope: str) -> list[tuple[Location, str]]:
    first: dict[str, Location] = {}
    problems = []
    for loc, key in items:
        if key in first:
            why = f"duplicate {what} {key!r} {scope} (first at {location_path(first[key])})"
            problems.append((loc, f"{why}; remove or rename one"))
        else:
            first[key] = loc
    return problems


def resolve_targets(
    suites: list[tuple[int, _SuiteView]], base_dir: Path, limits: InputLimits | None = None
) -> list[tuple[Location, str]]:
    """Read every suite's target (a file; an exam: its directory); store the result on the validated suite.

    A target is a regular file inside the bundle's folder: an absolute path, a ``..`` escape or a
    link leading outside would let a bundle make Assay read (and store) any file it can read.
    """
    limits = limits or InputLimits.from_settings()
    problems: list[tuple[Location, str]] = []
    for ti, suite in suites:
        if suite.target is None:
            continue
        kind = suite.target.kind
        loc: Location = ("teams", ti, "suites", suite.index, "target", kind)
        try:
            path = target_path(base_dir, suite.target.named, folder=kind == "exam")
            if kind == "config":
                resolved = ResolvedTarget("config", {"config": read_config(path, limits), **suite.target.stored_mocks()})
            elif kind == "exam":
                resolved = ResolvedTarget("exam", exam_target(path))
            else:
                sha256 = check_call_set(path, [k for _, k in suite.cases], limits)
                resolved = ResolvedTarget("call_set", {"call_set": {"path": str(path), "sha256": sha256}})
        except InputProblem as exc:
            problems.append((loc, str(exc)))
            continue
        if suite.model is not None:
            suite.model._resolved = resolved
    return problems


# --- turning pydantic's errors into located problems ---------------------------------------------


def pydantic_problems(exc: ValidationError, skip: set[Location]) -> list[tuple[Location, str]]:
    problems: list[tuple[Location, str]] = []
    for err in exc.errors(include_url=False):
        loc: Location = tuple(p for p in err["loc"] if p != "[key]")
        kind = err["type"]
        if kind == "bad_params":
            problems += [((*loc, *sub), what) for sub, what in err["ctx"]["problems"]]
            continue
        if kind == "extra_forbidden":
            if loc in skip:
                continue
            model = _type_at(loc[:-1])
            allowed = [f.alias or n for n, f in model.model_fields.items()] if _is_model(model) else []
            what = f"unknown field {loc[-1]!r}; allowed here: {', '.join(allowed)} — remove or rename it"
        elif kind == "missing":
            model = _type_at(loc[:-1])
            field = _field(model, loc[-1]) if _is_model(model) else None
            about = f" ({field.description.strip()})" if field is not None and field.description else ""
            what = f"required field {loc[-1]!r} is missing{about}; add it"
        elif kind in ("value_error", "assertion_error"):
            what = err["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        else:
            what = f"{err['msg']} (got {_short(err['input'])})"
        problems.append((loc, what))
    return problems


def _valid_items(raw: list[Any], model: type[BaseModel], keyed: bool = False) -> list[tuple[Any, Any]]:
    """(index or key, model) of the items that validate on their own; ``keyed`` items are (key, value) pairs."""
    items = []
    for i, item in raw if keyed else enumerate(raw):
        try:
            items.append((i, model.model_validate(item)))
        except ValidationError:
            continue
    return items


def _type_at(loc: Location) -> Any:
    tp: Any = Bundle
    for part in loc:
        tp = _strip(tp)
        origin = get_origin(tp)
        if origin is list and isinstance(part, int):
            tp = get_args(tp)[0]
        elif origin is dict:
            tp = get_args(tp)[1]
        elif _is_model(tp) and (field := _field(tp, part)) is not None:
            tp = field.annotation
        else:
            return None
    return _strip(tp)


def _strip(tp: Any) -> Any:
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType) and len(args := [a for a in get_args(tp) if a is not type(None)]) == 1:
            tp = args[0]
        else:
            return tp


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _field(model: type[BaseModel], name: Any) -> Any:
    for field_name, field in model.model_fields.items():
        if name in (field_name, field.alias):
            return field
    return None


def _dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    return [(i, v) for i, v in enumerate(value) if isinstance(v, dict)] if isinstance(value, list) else []


def _keyed_dicts(value: Any) -> list[tuple[int, str, dict[str, Any]]]:
    """(index, key, item) of the mappings in a raw list that have a string ``key``."""
    return [(i, v["key"], v) for i, v in _dicts(value) if isinstance(v.get("key"), str)]


def _keyed(value: Any) -> list[tuple[int, str]]:
    return [(i, k) for i, k, _ in _keyed_dicts(value)]


def location_path(loc: Location) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


