"""Bundles: the file that defines what is tested and who asks (schema ``assay.bundle/v1``).

A bundle is YAML or JSON: consumers, then teams with their cases (situations, never mechanisms),
suites (a run target and a selection of cases), assertions and per-consumer criteria.
:func:`read_bundle` parses and validates the whole file and reports *every* problem at once in one
:class:`~.errors.BundleError`, each naming the path inside the file (``teams[0].cases[2].situation``)
and the fix. Whether a consumer not declared in the file exists is the catalog's business: the
loader checks it at plan time.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .criteria import CriteriaSpec
from .errors import BundleError
from .ids import IDENTIFIER_RULE, content_hash, is_identifier
from .mechanisms import MECHANISMS, validate_params

SCHEMA = "assay.bundle/v1"
KNOWN_SCHEMAS: tuple[str, ...] = (SCHEMA,)

VENDOR_KEYS = frozenset({
    "platform", "provider", "vendor", "model", "llm", "voice", "voiceid", "squad", "squadid",
    "assistantid", "agentid", "phonenumber", "phonenumbers", "assistantoverrides", "variablevalues",
    "simulationspecification", "testconfigurations",
})  # fmt: skip
"""Keys that name how a test runs, compared lower-case without ``_``/``-`` (``squadId`` = ``squad_id``)."""
VENDOR_NAMES = frozenset({"vapi", "elevenlabs", "hamming"})
"""A key containing one of these words names a vendor."""

_OWN_CASES = "a suite names cases of its own team — fix the key or add the case"
_ADD_OR_REMOVE = "add an assertion with this key to the suite or one of its cases, or remove it from the criteria"
_IGNORED = "an ignored key never moves a verdict — keep it in one list"
_ONE_CALL_PER_LINE = "a call set holds one recorded call per line"

Location = tuple[str | int, ...]
"""A path inside the file, as pydantic reports it: ``("teams", 0, "cases", 2, "key")``."""


def _identifier(value: str) -> str:
    if not is_identifier(value):
        slug = re.sub(r"[^a-z0-9_-]+", "-", value.lower()).strip("-_")[:64]
        hint = f" — e.g. {slug!r}" if is_identifier(slug) else ""
        raise ValueError(f"{value!r} is not a valid identifier ({IDENTIFIER_RULE}){hint}")
    return value


Identifier = Annotated[str, AfterValidator(_identifier)]
Text = Annotated[str, Field(min_length=1)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class ConsumerDef(_Model):
    """An application-level asker (a CI gate, a publish gate, a nightly sweep); belongs to no team."""

    key: Identifier
    """The consumer's key, used by criteria (``blueprint_ci``)."""
    description: str = ""
    """One line: what this consumer decides with its verdicts."""


class Situation(_Model):
    """Who calls, what they want, what they must be told, what is true in the world. Never how it runs."""

    caller: Text
    """Who calls, in a line: name, role, mood."""
    wants: Text
    """What the caller wants from the call."""
    must_be_told: list[Text] = Field(default_factory=list)
    """What the agent must tell the caller for the call to go well."""
    world: dict[str, Any] = Field(default_factory=dict)
    """What is true in the world the agent can find out (service area, bookings, prices): any JSON values."""


class AssertionDef(_Model):
    """One behaviour to check: a key (the behaviour), a mechanism and its parameters."""

    key: Identifier
    """The behaviour's key; criteria name it. Rewording keeps the key and writes a new version."""
    mechanism: str
    """How it is checked: one of :data:`~.mechanisms.MECHANISMS`."""
    params: dict[str, Any] = Field(default_factory=dict, validate_default=True)
    """The mechanism's parameters, validated against its parameter model."""
    role: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    """Optional vendor-slot hint: which designated slot of a vendor this assertion goes into."""
    description: str = ""
    """What the behaviour means, in words."""

    @field_validator("mechanism")
    @classmethod
    def _known_mechanism(cls, value: str) -> str:
        if value not in MECHANISMS:
            close = difflib.get_close_matches(value, MECHANISMS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"unknown mechanism {value!r}; {hint}valid mechanisms: {', '.join(MECHANISMS)}")
        return value

    @field_validator("params")
    @classmethod
    def _params_fit(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        mechanism = info.data.get("mechanism")
        if mechanism is None:  # the mechanism itself is wrong and already reported
            return params
        try:
            validate_params(mechanism, params)
        except ValidationError as exc:
            problems = [(tuple(e["loc"]), _param_message(mechanism, e)) for e in exc.errors(include_url=False)]
            raise PydanticCustomError(
                "bad_params", "invalid parameters for {mechanism}", {"mechanism": mechanism, "problems": problems}
            ) from None
        return params

    def stored(self) -> dict[str, Any]:
        """What the catalog stores and hashes: defaults dropped, so spelling out a default is no change."""
        params = validate_params(self.mechanism, self.params).model_dump(mode="json", exclude_defaults=True)
        return {"mechanism": self.mechanism, "params": params, "role": self.role, "description": self.description}

    @property
    def content_hash(self) -> str:
        return content_hash(self.stored())


def _param_message(mechanism: str, err: Any) -> str:
    name = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        known = ", ".join(MECHANISMS[mechanism].model_fields) or "none"
        return f"unknown parameter {name!r} for {mechanism}; its parameters: {known}"
    if err["type"] == "missing":
        return f"{mechanism} needs parameter {name!r}"
    what = err["msg"].removeprefix("Value error, ")
    got = "" if err["type"] == "value_error" else f" (got {_short(err['input'])})"
    return f"parameter {name!r} of {mechanism}: {what}{got}"


class CaseDef(_Model):
    """A situation, owned by a team; the same situation runs under any runner."""

    key: Identifier
    """The case's key, unique within its team."""
    title: Text
    """One line naming the situation."""
    source_recipe: Identifier | None = None
    """The template (recipe) this case came from, if any."""
    situation: Situation
    """Who calls, what they want, what they must be told, what is true in the world."""
    assertions: list[AssertionDef] = Field(default_factory=list)
    """Behaviours checked on this case only."""

    def content(self) -> dict[str, Any]:
        """The case content the catalog stores, hashes, and every case run snapshots."""
        return {"title": self.title, "situation": self.situation.model_dump(mode="json")}


class TargetDef(_Model):
    """What a suite runs against: exactly one of a compiled config or a call set (paths relative to the bundle)."""

    config: Text | None = None
    """A JSON file holding a compiled assistant config; stored inline in the catalog."""
    call_set: Text | None = None
    """A JSONL file of recorded calls, one per line; stored as its absolute path and sha256."""

    @model_validator(mode="after")
    def _exactly_one(self) -> "TargetDef":
        if (self.config is None) == (self.call_set is None):
            found = "both" if self.config is not None else "neither"
            raise ValueError(
                f"a target names exactly one of 'config' (a compiled config JSON file) or 'call_set' "
                f"(a JSONL file of recorded calls); found {found}"
            )
        return self

    @property
    def kind(self) -> Literal["config", "call_set"]:
        return "config" if self.config is not None else "call_set"


@dataclass(frozen=True)
class ResolvedTarget:
    """A suite's target as the catalog stores it."""

    kind: Literal["config", "call_set"]
    target: dict[str, Any]
    """``{"config": {...}}`` or ``{"call_set": {"path": ..., "sha256": ...}}``."""

    @property
    def hash(self) -> str:
        return content_hash(self.target)


class SuiteDef(_Model):
    """An assistant's (or call set's) selection of the team's cases: the run target."""

    key: Identifier
    """The suite's key, unique within its team (``assay run TEAM/SUITE``)."""
    name: Text
    """A human name for the suite."""
    target: TargetDef
    """The compiled config or call set the suite runs against."""
    cases: list[Identifier] = Field(min_length=1)
    """Keys of the team's cases, in run order."""
    assertions: list[AssertionDef] = Field(default_factory=list)
    """Behaviours checked on every case of the suite."""
    criteria: dict[Identifier, CriteriaSpec] = Field(default_factory=dict)
    """Per consumer key: the assertion keys it requires, its threshold groups, the keys it ignores."""

    _resolved: ResolvedTarget | None = PrivateAttr(default=None)

    @property
    def resolved_target(self) -> ResolvedTarget:
        if self._resolved is None:
            raise RuntimeError(f"suite {self.key!r}: its target was not resolved; read bundles with read_bundle()")
        return self._resolved


class TeamDef(_Model):
    """A team: owns its cases and suites."""

    id: Identifier
    """The team's id (part of lake paths and of ``TEAM/SUITE`` names)."""
    name: Text
    """The team's display name."""
    cases: list[CaseDef] = Field(default_factory=list)
    """The team's situations."""
    suites: list[SuiteDef] = Field(default_factory=list)
    """The team's suites."""


class Bundle(_Model):
    """A whole bundle file."""

    schema_id: Literal["assay.bundle/v1"] = Field(alias="schema")
    """The format and its version: ``assay.bundle/v1``."""
    consumers: list[ConsumerDef] = Field(default_factory=list)
    """Consumers declared (or re-described) by this bundle."""
    teams: list[TeamDef] = Field(default_factory=list)
    """The teams this bundle defines."""

    _file: str = PrivateAttr(default="<bundle>")

    @property
    def file(self) -> str:
        """The file this bundle was read from, as named by the caller (for messages)."""
        return self._file


def criteria_spec(spec: CriteriaSpec) -> dict[str, Any]:
    """A spec as stored: key lists sorted, so reordering a list is not a new version."""
    return {
        "required": sorted(spec.required),
        "threshold": [{"keys": sorted(g.keys), "min": g.min} for g in spec.threshold],
        "ignore": sorted(spec.ignore),
    }


# --- reading -------------------------------------------------------------------------------------


def read_bundle(path: str | Path) -> Bundle:
    """Parse ``path`` (``.yaml``/``.yml`` or ``.json``) and validate it; raise one BundleError listing every problem."""
    file = str(path)
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".json"):
        raise BundleError(
            file, [("", f"unknown extension {suffix or '(none)'!r}; a bundle is a .yaml, .yml or .json file")]
        )
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BundleError(file, [("", f"no such file (tried {path.resolve()})")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(file, [("", f"cannot read the file: {exc}")]) from None
    raw = _parse_json(file, text) if suffix == ".json" else _parse_yaml(file, text)
    return validate_bundle(raw, file, base_dir=path.resolve().parent)


def validate_bundle(raw: Any, file: str, base_dir: Path | None = None) -> Bundle:
    """Validate a parsed bundle; target paths resolve against ``base_dir`` (default: the file's folder)."""
    base_dir = base_dir or Path(file).resolve().parent
    if not isinstance(raw, dict):
        raise BundleError(
            file, [("", f"a bundle is a mapping starting with `schema: {SCHEMA}`; found {type(raw).__name__}")]
        )
    schema = raw.get("schema")
    if schema not in KNOWN_SCHEMAS:
        what = "is missing" if schema is None else f"{schema!r} is not a bundle schema this build of Assay reads"
        fix = f"known: {', '.join(KNOWN_SCHEMAS)} — start the file with `schema: {SCHEMA}`"
        raise BundleError(file, [("schema", f"{what}; {fix}")])

    vendor = _vendor_problems(raw)
    problems: list[tuple[Location, str]] = list(vendor.items())
    bundle: Bundle | None = None
    try:
        bundle = Bundle.model_validate(raw)
    except ValidationError as exc:
        problems += _pydantic_problems(exc, skip=set(vendor))
    # Cross-checks read names from the file itself, so a broken bundle still gets all of them.
    more, suites = _consistency_problems(raw, bundle)
    problems += more
    problems += _resolve_targets(suites, base_dir)
    if problems:
        raise BundleError(file, [(_path(loc), what) for loc, what in problems])
    assert bundle is not None
    bundle._file = file
    return bundle


def _parse_yaml(file: str, text: str) -> Any:
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader that also refuses duplicate keys
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise BundleError(file, [("", f"not valid YAML: {where}{exc.problem or exc.context}")]) from None
    except yaml.YAMLError as exc:
        raise BundleError(file, [("", f"not valid YAML: {exc}")]) from None


def _parse_json(file: str, text: str) -> Any:
    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for k, v in pairs:
            if k in seen:
                raise ValueError(f"duplicate key {k!r} in an object; each key appears once")
            seen[k] = v
        return seen

    try:
        return json.loads(text, object_pairs_hook=unique)
    except json.JSONDecodeError as exc:
        raise BundleError(file, [("", f"not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}")]) from None
    except ValueError as exc:
        raise BundleError(file, [("", f"not valid JSON: {exc}")]) from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a mapping with a repeated key is an error (not a silent overwrite)."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            if key in seen:
                why = f"duplicate key {key!r} (first on line {seen[key]}); each key appears once"
                raise yaml.constructor.ConstructorError(None, None, why, key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        except TypeError:  # an unhashable key: the constructor reports it
            continue
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


# --- the rules pydantic cannot see ---------------------------------------------------------------


def _is_vendor_key(key: str) -> bool:
    if re.sub(r"[^a-z0-9]", "", key.lower()) in VENDOR_KEYS:
        return True
    words = [w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", key)]
    joined = {a + b for a, b in zip(words, words[1:])}
    return bool(VENDOR_NAMES & (set(words) | joined))


def _vendor_problems(raw: dict[str, Any]) -> dict[Location, str]:
    """Keys naming a vendor mechanism on a case, anywhere in its situation, on a suite or its target."""
    found: dict[Location, str] = {}

    def scan(obj: Any, loc: Location, owner: str, deep: bool) -> None:
        if isinstance(obj, list) and deep:
            for i, item in enumerate(obj):
                scan(item, (*loc, i), owner, deep)
        if not isinstance(obj, dict):
            return
        for key, value in obj.items():
            if isinstance(key, str) and _is_vendor_key(key):
                found[(*loc, key)] = (
                    f"{key!r} is a vendor mechanism; {owner}, never how it runs — remove it "
                    "(the runner is chosen at run time: assay run --runner)"
                )
            elif deep:
                scan(value, (*loc, key), owner, deep)

    for ti, team in _dicts(raw.get("teams")):
        for ci, case in _dicts(team.get("cases")):
            loc = ("teams", ti, "cases", ci)
            scan(case, loc, "a case names a situation", deep=False)
            scan(case.get("situation"), (*loc, "situation"), "a case names a situation", deep=True)
        for si, suite in _dicts(team.get("suites")):
            loc = ("teams", ti, "suites", si)
            scan(suite, loc, "a suite names its cases and its target", deep=False)
            scan(suite.get("target"), (*loc, "target"), "a target is a compiled config or a call set", deep=False)
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


def _consistency_problems(raw: dict[str, Any], bundle: Bundle | None) -> tuple[list[tuple[Location, str]], list]:
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
            why = f"{key!r} matches no assertion of suite {suite!r} (its assertion keys: {known})"
            problems.append((loc, f"{why}; {_ADD_OR_REMOVE}"))
        elif loc[-2] == "ignore" and key in grouped:
            problems.append((loc, f"{key!r} is both ignored and counted in a threshold group; {_IGNORED}"))
    return problems


def _duplicates(items: list[tuple[Location, str]], what: str, scope: str) -> list[tuple[Location, str]]:
    first: dict[str, Location] = {}
    problems = []
    for loc, key in items:
        if key in first:
            why = f"duplicate {what} {key!r} {scope} (first at {_path(first[key])})"
            problems.append((loc, f"{why}; remove or rename one"))
        else:
            first[key] = loc
    return problems


def _resolve_targets(suites: list[tuple[int, _SuiteView]], base_dir: Path) -> list[tuple[Location, str]]:
    """Read every suite's target file; store the result on the validated suite."""
    problems: list[tuple[Location, str]] = []
    for ti, suite in suites:
        if suite.target is None:
            continue
        kind = suite.target.kind
        loc: Location = ("teams", ti, "suites", suite.index, "target", kind)
        path = (base_dir / (suite.target.config or suite.target.call_set or "")).resolve()
        if not path.is_file():
            what = "is a folder, not a file" if path.is_dir() else "does not exist"
            problems.append((loc, f"{path} {what}; target paths are relative to the bundle's folder ({base_dir})"))
            continue
        data = path.read_bytes()
        if kind == "config":
            try:
                config = json.loads(data)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                problems.append((loc, f"{path} is not valid JSON: {exc}; a config target is a compiled config in JSON"))
                continue
            if not isinstance(config, dict):
                why = f"{path} holds a JSON {type(config).__name__}"
                problems.append((loc, f"{why}; a compiled config is a JSON object"))
                continue
            resolved = ResolvedTarget("config", {"config": config})
        else:
            bad = _first_bad_jsonl_line(data)
            if bad:
                problems.append((loc, f"{path} line {bad} is not a JSON object; {_ONE_CALL_PER_LINE}"))
                continue
            sha256 = hashlib.sha256(data).hexdigest()
            resolved = ResolvedTarget("call_set", {"call_set": {"path": str(path), "sha256": sha256}})
        if suite.model is not None:
            suite.model._resolved = resolved
    return problems


def _first_bad_jsonl_line(data: bytes) -> int | None:
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            if not isinstance(json.loads(line), dict):
                return n
        except (json.JSONDecodeError, UnicodeDecodeError):
            return n
    return None


# --- turning pydantic's errors into located problems ---------------------------------------------


def _pydantic_problems(exc: ValidationError, skip: set[Location]) -> list[tuple[Location, str]]:
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


def _path(loc: Location) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = [
    "SCHEMA", "KNOWN_SCHEMAS", "VENDOR_KEYS", "VENDOR_NAMES",
    "AssertionDef", "Bundle", "CaseDef", "ConsumerDef", "ResolvedTarget", "Situation", "SuiteDef", "TargetDef",
    "TeamDef", "criteria_spec", "read_bundle", "validate_bundle",
]  # fmt: skip
