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
from .bundle_templates import template_problems
from .bundle_input import InputLimits, InputProblem, hostile_values, read_capped, resolved, utf8
from .errors import BundleError
from .tool_mocks import bundle_problems as tool_mock_problems

# --- reading -------------------------------------------------------------------------------------


def read_bundle(path: str | Path, limits: InputLimits | None = None) -> Bundle:
    """Parse ``path`` (``.yaml``/``.yml`` or ``.json``) and validate it; raise one BundleError listing every problem.

    ``limits`` caps sizes and nesting (default: the ``ASSAY_MAX_*`` settings). The file must be a
    regular file of UTF-8 text; YAML aliases are refused (an alias bomb expands exponentially).
    """
    file = str(path)
    path = Path(path)
    limits = limits or InputLimits.from_settings()
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".json"):
        raise BundleError(
            file, [("", f"unknown extension {suffix or '(none)'!r}; a bundle is a .yaml, .yml or .json file")]
        )
    try:
        text = utf8(read_capped(path, limits.max_bundle_bytes, "ASSAY_MAX_BUNDLE_BYTES"))
    except InputProblem as exc:
        raise BundleError(file, [("", str(exc))]) from None
    raw = _parse_json(file, text) if suffix == ".json" else _parse_yaml(file, text, limits.max_nesting)
    return validate_bundle(raw, file, base_dir=path.resolve().parent, limits=limits)


def validate_bundle(raw: Any, file: str, base_dir: Path | None = None, limits: InputLimits | None = None) -> Bundle:
    """Validate a parsed bundle; target paths resolve against ``base_dir`` (default: the file's folder)."""
    if base_dir is None:
        try:
            base_dir = resolved(Path(file)).parent
        except InputProblem as exc:
            raise BundleError(file, [("", str(exc))]) from None
    limits = limits or InputLimits.from_settings()
    hostile = hostile_values(raw, limits.max_nesting)
    if hostile:  # first: the other checks walk the document, and would trip on what this refuses
        raise BundleError(file, [(location_path(loc), what) for loc, what in hostile])
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
    problems += template_problems(raw)
    problems += resolve_targets(suites, base_dir, limits)
    if bundle is not None and not problems:
        problems += tool_mock_problems(bundle)
    if problems:
        raise BundleError(file, [(location_path(loc), what) for loc, what in problems])
    assert bundle is not None
    bundle._file = file
    return bundle


def _parse_yaml(file: str, text: str, max_nesting: int) -> Any:
    loader: _UniqueKeyLoader | None = None
    try:
        loader = _UniqueKeyLoader(text)  # a SafeLoader that also refuses duplicate keys, aliases and deep nesting
        loader.max_nesting = max_nesting
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise BundleError(file, [("", f"not valid YAML: {where}{exc.problem or exc.context}")]) from None
    except yaml.YAMLError as exc:
        raise BundleError(file, [("", f"not valid YAML: {exc}")]) from None
    finally:
        if loader is not None:
            loader.dispose()


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
    except RecursionError:  # the C parser nests one frame per level; the exact cap is checked after parsing
        why = "not valid JSON: nested too deeply to parse; flatten it (the cap is ASSAY_MAX_NESTING levels)"
        raise BundleError(file, [("", why)]) from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a mapping with a repeated key is an error (not a silent overwrite),
    an alias (``*name``) is refused before it is expanded (a kilobyte of aliases can expand to billions of
    nodes), and nesting past ``max_nesting`` is refused before the composer's recursion runs out of stack."""

    max_nesting = 64
    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            why = "an alias (*name) is not allowed in a bundle; write the value out in full"
            raise yaml.composer.ComposerError(None, None, why, mark)
        self._depth += 1
        try:
            if self._depth > self.max_nesting and not self.check_event(yaml.ScalarEvent):
                mark = self.peek_event().start_mark
                why = f"nested deeper than the cap of {self.max_nesting} levels; flatten it or raise ASSAY_MAX_NESTING"
                raise yaml.composer.ComposerError(None, None, why, mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


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
