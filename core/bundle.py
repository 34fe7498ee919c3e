"""Bundles: the file that defines what is tested and who asks (schema ``assay.bundle/v1``).

A bundle is YAML or JSON: consumers, then teams with their cases (situations, never mechanisms),
suites (a run target and a selection of cases), assertions and per-consumer criteria.
:func:`read_bundle` parses and validates the whole file and reports *every* problem at once in one
:class:`~.errors.BundleError`, each naming the path inside the file (``teams[0].cases[2].situation``)
and the fix. Whether a consumer not declared in the file exists is the catalog's business: the
loader checks it at plan time.
"""


from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .bundle_models import (
    KNOWN_SCHEMAS,
    SCHEMA,
    VENDOR_KEYS,
    VENDOR_NAMES,
    AssertionDef,
    Bundle,
    CaseDef,
    ConsumerDef,
    Location,
    ResolvedTarget,
    Situation,
    SuiteDef,
    TargetDef,
    TeamDef,
    criteria_spec,
)
from .bundle_rules import consistency_problems, location_path, pydantic_problems, resolve_targets, vendor_problems
from .errors import BundleError

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

    vendor = vendor_problems(raw)
    problems: list[tuple[Location, str]] = list(vendor.items())
    bundle: Bundle | None = None
    try:
        bundle = Bundle.model_validate(raw)
    except ValidationError as exc:
        problems += pydantic_problems(exc, skip=set(vendor))
    # Cross-checks read names from the file itself, so a broken bundle still gets all of them.
    more, suites = consistency_problems(raw, bundle)
    problems += more
    problems += resolve_targets(suites, base_dir)
    if problems:
        raise BundleError(file, [(location_path(loc), what) for loc, what in problems])
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


__all__ = [
    "SCHEMA", "KNOWN_SCHEMAS", "VENDOR_KEYS", "VENDOR_NAMES",
    "AssertionDef", "Bundle", "CaseDef", "ConsumerDef", "ResolvedTarget", "Situation", "SuiteDef", "TargetDef",
    "TeamDef", "criteria_spec", "read_bundle", "validate_bundle",
]  # fmt: skip
