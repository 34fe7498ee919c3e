"""A generated corpus of hostile bundles and call sets, and the campaign that loads each one.

Each :class:`Hostile` writes one bad bundle (and the targets it names) into an empty folder: files that
never end or block, alias bombs, 20,000 nested brackets, NaN, ``1e400``, NUL, text that is not UTF-8,
targets leaving the bundle's folder, call-set lines the runner would refuse. :func:`attempt` loads one
the way ``assay load`` does; :func:`campaign` runs them all for ``bench/results.json``'s ``inputs.*``.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import sqlalchemy as sa
import yaml

if str(Path(__file__).resolve().parents[1]) not in sys.path:  # the lead's bench calls campaign() outside pytest
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from factories import CALLS, base, case, set_at, write  # noqa: E402

CAPS = {"ASSAY_MAX_BUNDLE_BYTES": "262144", "ASSAY_MAX_CONFIG_BYTES": "65536", "ASSAY_MAX_CALL_BYTES": "16384"}
"""Small caps for the campaign, so an oversized file costs kilobytes to write, not megabytes."""

BOM = b"\xef\xbb\xbf"
DEEP = 20_000
"""Nesting that exhausts a recursive parser's stack."""


@dataclass(frozen=True)
class Hostile:
    """One hostile input: ``build`` writes it into an empty folder and returns the bundle's path."""

    name: str
    expect: str
    """A phrase the error must contain (besides the bundle's path)."""
    build: Callable[[Path], Path]


def _text(folder: Path, text: str | bytes, name: str = "bundle.yaml") -> Path:
    """A bundle of raw text or bytes, with the base bundle's target files beside it."""
    path = write(folder, base(), name)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _placeholder() -> dict[str, Any]:
    doc = base()
    case(doc)["situation"]["world"] = "__HOSTILE__"
    return doc


def _yaml_with_world(raw: str) -> str:
    """The base bundle as YAML (or JSON) with the first case's world replaced by ``raw`` text."""
    return yaml.safe_dump(_placeholder(), sort_keys=False).replace("__HOSTILE__", raw)


def _json_with_world(raw: str) -> str:
    return json.dumps(_placeholder()).replace('"__HOSTILE__"', raw)


def _nested(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = {"deeper": value}
    return value


_BOMB = "{" + ", ".join(
    ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
) + "}"
"""A billion laughs: nine levels of nine aliases, about 387 million nodes once expanded."""


# --- bundle files ----------------------------------------------------------------------------------


def _mutated(path: str, value: Any, name: str = "bundle.yaml") -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        doc = base()
        set_at(path, value)(doc)
        return write(folder, doc, name)

    return build


def _special(kind: str) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        path = _text(folder, "")
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "zero":
            path.symlink_to("/dev/zero")
        else:
            path.mkdir()
        return path

    return build


_HUGE = int(CAPS["ASSAY_MAX_BUNDLE_BYTES"]) + 1
T0 = "teams.0.cases.0"
S0 = "teams.0.suites.0"
BUNDLES = [
    Hostile("yaml-alias-bomb-in-world", "alias", lambda f: _text(f, _yaml_with_world(_BOMB))),
    Hostile("yaml-alias-bomb-at-top", "alias", lambda f: _text(f, "bomb: " + _BOMB + "\n" + yaml.safe_dump(base()))),
    Hostile("yaml-one-alias", "alias", lambda f: _text(f, _yaml_with_world("&w {a: 1}") + "x: *w\n")),
    Hostile("yaml-merge-key", "alias", lambda f: _text(f, _yaml_with_world("{<<: *nowhere, a: 1}"))),
    Hostile("yaml-20000-brackets", "nested deeper", lambda f: _text(f, _yaml_with_world("[" * DEEP + "]" * DEEP))),
    Hostile("yaml-20000-unclosed", "nested deeper", lambda f: _text(f, _yaml_with_world("[" * DEEP))),
    Hostile("yaml-20000-braces", "nested deeper", lambda f: _text(f, _yaml_with_world("{a: " * DEEP + "}" * DEEP))),
    Hostile("yaml-100-levels", "nested deeper", _mutated(f"{T0}.situation.world", _nested(100))),
    Hostile("json-20000-brackets", "nested too deeply",
            lambda f: _text(f, _json_with_world("[" * DEEP + "]" * DEEP), "bundle.json")),
    Hostile("json-20000-objects", "nested too deeply",
            lambda f: _text(f, _json_with_world('{"a": ' * DEEP + "1" + "}" * DEEP), "bundle.json")),
    Hostile("json-100-levels", "nested deeper", _mutated(f"{T0}.situation.world", _nested(100), "bundle.json")),
    Hostile("symlink-to-dev-zero", "not a regular file", _special("zero")),
    Hostile("fifo", "a FIFO", _special("fifo")),
    Hostile("folder", "a folder", _special("folder")),
    Hostile("oversized-yaml", "ASSAY_MAX_BUNDLE_BYTES", _mutated(f"{T0}.title", "x" * _HUGE)),
    Hostile("oversized-json", "ASSAY_MAX_BUNDLE_BYTES", _mutated(f"{T0}.title", "x" * _HUGE, "bundle.json")),
    Hostile("bom-yaml", "byte order mark", lambda f: _text(f, BOM + yaml.safe_dump(base()).encode())),
    Hostile("bom-json", "byte order mark", lambda f: _text(f, BOM + json.dumps(base()).encode(), "bundle.json")),
    Hostile("invalid-utf8-byte", "not valid UTF-8",
            lambda f: _text(f, yaml.safe_dump(base()).encode().replace(b"Burst pipe", b"Burst \xff pipe"))),
    Hostile("latin1-title", "not valid UTF-8",
            lambda f: _text(f, yaml.safe_dump(base()).encode().replace(b"Reschedule", b"R\xe9schedule"))),
    Hostile("truncated-utf8", "not valid UTF-8", lambda f: _text(f, yaml.safe_dump(base()).encode() + b"# \xe2\x82")),
    Hostile("invalid-utf8-json", "not valid UTF-8",
            lambda f: _text(f, json.dumps(base()).encode().replace(b"Reschedule", b"Re\xc3schedule"), "bundle.json")),
    Hostile("raw-nul-byte-yaml", "not valid YAML",
            lambda f: _text(f, yaml.safe_dump(base()).replace("Reschedule", "Res\x00chedule"))),
    Hostile("nul-in-title-yaml", "NUL", lambda f: _text(f, yaml.safe_dump(base()).replace(
        "title: Reschedule", 'title: "Res\\0chedule"'))),
    Hostile("nul-in-title-json", "NUL", _mutated(f"{T0}.title", "Caller\x00outside", "bundle.json")),
    Hostile("nul-in-world-key", "NUL", _mutated(f"{T0}.situation.world", {"zip\x00code": "60827"})),
    Hostile("nul-in-world-value", "NUL", _mutated(f"{T0}.situation.world", {"zips": ["606\x0001"]})),
    Hostile("nul-in-case-key", "NUL", _mutated("teams.0.cases.2.key", "resched\x00ule")),
    Hostile("nul-in-team-name", "NUL", _mutated("teams.0.name", "Acme\x00Plumbing")),
    Hostile("nul-in-params", "NUL", _mutated(f"{T0}.assertions.0.params.text", "out\x00side")),
    Hostile("nan-in-world", "NaN", lambda f: _text(f, _yaml_with_world("{x: .nan}"))),
    Hostile("inf-in-world", "infinite", lambda f: _text(f, _yaml_with_world("{x: .inf}"))),
    Hostile("minus-inf-in-world", "infinite", lambda f: _text(f, _yaml_with_world("{x: -.inf}"))),
    Hostile("json-nan-in-world", "NaN", lambda f: _text(f, _json_with_world('{"x": NaN}'), "bundle.json")),
    Hostile("json-infinity-in-world", "infinite",
            lambda f: _text(f, _json_with_world('{"x": Infinity}'), "bundle.json")),
    Hostile("json-1e400-in-world", "infinite", lambda f: _text(f, _json_with_world('{"x": 1e400}'), "bundle.json")),
    Hostile("inf-in-params", "infinite", _mutated("teams.0.suites.1.assertions.0.params.max", float("inf"))),
    Hostile("nan-threshold", "NaN", _mutated(f"{S0}.criteria.nightly.threshold.0.min", float("nan"))),
    Hostile("empty-file", "a bundle is a mapping", lambda f: _text(f, "")),
    Hostile("top-level-list", "a bundle is a mapping", lambda f: _text(f, "- 1\n- 2\n")),
    Hostile("python-tag", "not valid YAML", lambda f: _text(f, "!!python/object/apply:os.system ['true']\n")),
    Hostile("duplicate-key", "duplicate key", lambda f: _text(f, yaml.safe_dump(base()) + "schema: again\n")),
    Hostile("unknown-schema", "not a bundle schema", _mutated("schema", "assay.bundle/v99")),
    Hostile("no-such-file", "no such file", lambda f: f / "missing.yaml"),
    Hostile("unknown-extension", "unknown extension", lambda f: _text(f, yaml.safe_dump(base()), "bundle.txt")),
]  # fmt: skip


# --- targets ---------------------------------------------------------------------------------------


def _target(kind: str, named: Callable[[Path], str]) -> Callable[[Path], Path]:
    """The base bundle with the config suite's (or the call-set suite's) target naming ``named(folder)``."""

    def build(folder: Path) -> Path:
        doc = base()
        at = doc["teams"][0]["suites"][0 if kind == "config" else 1]
        write(folder, doc)  # the ordinary target files, so only the one named differs
        at["target"] = {kind: named(folder)}
        return write(folder, doc)

    return build


def _outside(folder: Path) -> Path:
    outside = folder.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "x.json").write_text(json.dumps({"name": "x", "prompt": "p"}))
    (outside / "x.jsonl").write_text(json.dumps(CALLS[0]) + "\n")
    return outside


def _put(name: str, make: Callable[[Path], object]) -> Callable[[Path], str]:
    """A target named ``name`` in the bundle's folder, made there by ``make(path)``."""

    def named(folder: Path) -> str:
        make(folder / name)
        return name

    return named


def _link(to: Callable[[Path], str | Path], name: str) -> Callable[[Path], str]:
    return _put(name, lambda path: path.symlink_to(to(path.parent)))


def _file(name: str, content: str | bytes) -> Callable[[Path], str]:
    return _put(name, lambda path: path.write_bytes(content.encode() if isinstance(content, str) else content))


def _fifo(name: str) -> Callable[[Path], str]:
    return _put(name, os.mkfifo)


def _config(**more: Any) -> str:
    return json.dumps({"name": "Main line", "prompt": "Hours: {{hours}}", **more})


_BIG = int(CAPS["ASSAY_MAX_CONFIG_BYTES"])
TARGETS = [
    Hostile("config-etc-passwd", "absolute path", _target("config", lambda f: "/etc/passwd")),
    Hostile("config-proc-environ", "absolute path", _target("config", lambda f: "/proc/self/environ")),
    Hostile("config-dotdot", "outside the bundle's folder", _target("config", lambda f: "../../../outside/x.json")),
    Hostile("config-dotdot-existing", "outside the bundle's folder",
            _target("config", lambda f: (_outside(f), "../outside/x.json")[1])),
    Hostile("config-link-outside", "through a link",
            _target("config", _link(lambda f: _outside(f) / "x.json", "c.json"))),
    Hostile("config-link-etc-passwd", "through a link", _target("config", _link(lambda f: "/etc/passwd", "p.json"))),
    Hostile("config-link-dev-zero", "through a link", _target("config", _link(lambda f: "/dev/zero", "z.json"))),
    Hostile("config-fifo", "a FIFO", _target("config", _fifo("fifo.json"))),
    Hostile("config-folder", "a folder", _target("config", lambda f: "configs")),
    Hostile("config-oversized", "ASSAY_MAX_CONFIG_BYTES", 
            _target("config", _file("big.json", _config(pad="x" * _BIG)))),
    Hostile("config-bom", "byte order mark", _target("config", _file("bom.json", BOM + _config().encode()))),
    Hostile("config-invalid-utf8", "not valid UTF-8",
            _target("config", _file("bad.json", _config().encode().replace(b"Hours", b"H\xffours")))),
    Hostile("config-nan", "NaN", _target("config", _file("nan.json", _config(temperature=float("nan"))))),
    Hostile("config-1e400", "infinite", _target("config", _file("inf.json", _config()[:-1] + ', "t": 1e400}'))),
    Hostile("config-nul", "NUL", _target("config", _file("nul.json", _config(prompt="Hours\x00")))),
    Hostile("config-20000-brackets", "nested too deeply",
            _target("config", _file("deep.json", '{"a": ' + "[" * DEEP + "]" * DEEP + "}"))),
    Hostile("config-100-levels", "nested deeper", _target("config", _file("d.json", _config(tools=_nested(100))))),
    Hostile("config-a-list", "JSON list", _target("config", _file("list.json", "[1, 2]"))),
    Hostile("config-not-json", "not valid JSON", _target("config", _file("yaml.json", "name: x\n"))),
    Hostile("call-set-etc-passwd", "absolute path", _target("call_set", lambda f: "/etc/passwd")),
    Hostile("call-set-dotdot", "outside the bundle's folder",
            _target("call_set", lambda f: (_outside(f), "../outside/x.jsonl")[1])),
    Hostile("call-set-link-outside", "through a link",
            _target("call_set", _link(lambda f: _outside(f) / "x.jsonl", "c.jsonl"))),
    Hostile("call-set-link-dev-zero", "through a link", _target("call_set", _link(lambda f: "/dev/zero", "z.jsonl"))),
    Hostile("call-set-fifo", "a FIFO", _target("call_set", _fifo("fifo.jsonl"))),
]  # fmt: skip


# --- call-set lines --------------------------------------------------------------------------------

_GOOD = {"call_id": "c1", "case": "outside-area", "started_at": "2026-11-20T15:04:05Z", "duration_ms": 84210,
         "cost_usd": 0.23, "transcript": [{"role": "agent", "text": "Hello", "t": 0.0}],
         "tool_calls": [{"name": "check", "arguments": {"zip": "60614"}, "result": {"ok": True}}],
         "evaluations": [{"name": "g", "evaluator": "hamming:guardrail", "verdict": "pass"}],
         "provider": "hamming", "provider_payload": {"id": "tcr_1"}}  # fmt: skip


def _line(**changes: Any) -> bytes:
    return json.dumps({**copy.deepcopy(_GOOD), "call_id": "c2", **changes}, ensure_ascii=False).encode()


def _calls(*lines: bytes | str) -> Callable[[Path], Path]:
    """The base bundle whose call set holds a good line, then ``lines``."""
    data = b"\n".join([json.dumps(_GOOD).encode(), *(x.encode() if isinstance(x, str) else x for x in lines)])
    return _target("call_set", _file("calls.jsonl", data + b"\n"))


_LONG = int(CAPS["ASSAY_MAX_CALL_BYTES"]) + 100
CALL_SETS = [
    Hostile("cost-nan", "NaN", _calls(_line().replace(b'"cost_usd": 0.23', b'"cost_usd": NaN'))),
    Hostile("duration-1e400", "infinite", _calls(_line().replace(b'"duration_ms": 84210', b'"duration_ms": 1e400'))),
    Hostile("cost-infinity", "infinite", _calls(_line().replace(b'"cost_usd": 0.23', b'"cost_usd": Infinity'))),
    Hostile("score-minus-infinity", "infinite", _calls(_line().replace(b'"verdict": "pass"', b'"score": -Infinity'))),
    Hostile("nan-in-payload", "NaN", _calls(_line().replace(b'"tcr_1"', b"NaN"))),
    Hostile("turn-t-nan", "NaN", _calls(_line().replace(b'"t": 0.0', b'"t": NaN'))),
    Hostile("nul-in-transcript", "NUL", _calls(_line(transcript=[{"role": "agent", "text": "Hel\x00lo"}]))),
    Hostile("nul-in-payload-key", "NUL", _calls(_line(provider_payload={"i\x00d": 1}))),
    Hostile("nul-in-tool-result", "NUL", _calls(_line(tool_calls=[{"name": "x", "result": "o\x00k"}]))),
    Hostile("nul-in-call-id", "NUL", _calls(_line(call_id="c\x002"))),
    Hostile("bom", "byte order mark", _target("call_set", _file("calls.jsonl", BOM + json.dumps(_GOOD).encode()))),
    Hostile("invalid-utf8", "not valid UTF-8", _calls(_line().replace(b"Hello", b"He\xffllo"))),
    Hostile("latin1", "not valid UTF-8", _calls(_line().replace(b"Hello", "Héllo".encode("latin-1")))),
    Hostile("line-over-cap", "ASSAY_MAX_CALL_BYTES", _calls(_line(provider_payload={"pad": "x" * _LONG}))),
    Hostile("last-line-over-cap-no-newline", "ASSAY_MAX_CALL_BYTES",
            _target("call_set", _file("calls.jsonl", json.dumps(_GOOD) + "\n" + "x" * (_LONG * 3)))),
    Hostile("5000-brackets", "nested too deeply",
            _calls(_line().replace(b'{"id": "tcr_1"}', b"[" * 5000 + b"]" * 5000))),  # under the line cap
    Hostile("100-levels", "nested deeper", _calls(_line(provider_payload=_nested(100)))),
    Hostile("unknown-case", "is not a case", _calls(_line(case="burst-pipe"))),
    Hostile("unknown-field", "unknown field", _calls(_line(vendor_extra=1))),
    Hostile("line-is-a-list", "expected a JSON object", _calls("[1, 2]")),
    Hostile("not-json", "not valid JSON", _calls("{call_id: c2}")),
    Hostile("duplicate-call-id", "must be unique", _calls(_line(call_id="c1"))),
    Hostile("missing-call-id", "required", _calls(json.dumps({"case": "outside-area"}))),
    Hostile("empty-call-id", "non-empty", _calls(_line(call_id=""))),
    Hostile("time-without-offset", "ISO 8601", _calls(_line(started_at="2026-11-20T15:04:05"))),
    Hostile("year-zero", "ISO 8601", _calls(_line(started_at="0000-11-20T15:04:05Z"))),
    Hostile("negative-duration", "a number >= 0", _calls(_line(duration_ms=-1))),
    Hostile("cost-as-text", "a number >= 0", _calls(_line(cost_usd="0.23"))),
    Hostile("bad-role", "is not a role", _calls(_line(transcript=[{"role": "narrator", "text": "x"}]))),
    Hostile("arguments-not-object", "an object", _calls(_line(tool_calls=[{"name": "x", "arguments": [1]}]))),
    Hostile("bad-verdict", "is not a verdict",
            _calls(_line(evaluations=[{"name": "g", "evaluator": "h:g", "verdict": "maybe"}]))),
]  # fmt: skip

CORPUS = [*BUNDLES, *TARGETS, *(Hostile(f"call-set-{h.name}", h.expect, h.build) for h in CALL_SETS)]
"""Every hostile input, each named uniquely."""


# --- the campaign ----------------------------------------------------------------------------------


def catalog_state(engine: sa.Engine) -> dict[str, list[str]]:
    """Every row of every catalog table, as sorted canonical text (two states compare exactly)."""
    from assay.storage.catalog import tables as t

    def rows(conn: sa.Connection, table: sa.Table) -> list[str]:
        return sorted(json.dumps(dict(r._mapping), sort_keys=True, default=str) for r in conn.execute(sa.select(table)))

    with engine.connect() as conn:
        return {table.name: rows(conn, table) for table in t.metadata.sorted_tables}


def files_under(folder: Path) -> list[str]:
    """The files under ``folder`` (a lake, a home), relative and sorted."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


@dataclass(frozen=True)
class Outcome:
    """``clear``: refused by a BundleError naming the file and the reason; ``written``: the catalog changed."""

    name: str
    clear: bool
    written: bool
    message: str


def attempt(hostile: Hostile, root: Path, engine: sa.Engine, watched: Path | None = None) -> Outcome:
    """Build ``hostile`` under ``root`` and load it with the real load path; report what happened."""
    from assay.core.errors import BundleError
    from assay.storage.catalog.load import load_bundle

    folder = root / hostile.name / "bundle"
    folder.mkdir(parents=True)
    path = hostile.build(folder)
    state = lambda: (catalog_state(engine), files_under(watched) if watched else [])  # noqa: E731
    before = state()
    try:
        load_bundle(engine, path)
        clear, message = False, "accepted"
    except BundleError as exc:
        message = str(exc)
        clear = str(path) in message and hostile.expect in message
    except Exception as exc:  # noqa: BLE001 - any other exception is exactly what the campaign counts as unclear
        clear, message = False, f"{type(exc).__name__}: {exc}"
    return Outcome(hostile.name, clear, before != state(), message[:2000])


def seed(root: Path, engine: sa.Engine) -> None:
    """Load the valid base bundle first, so a hostile load that edited a row would show."""
    from assay.storage.catalog.load import load_bundle

    folder = root / "_seed"
    folder.mkdir(parents=True)
    load_bundle(engine, write(folder, base()))


def campaign() -> dict[str, Any]:
    """Load every hostile input on a fresh SQLite catalog; the figures for ``inputs.*`` in ``bench/results.json``."""
    from assay.storage.catalog.engine import create_catalog_engine, migrate

    with tempfile.TemporaryDirectory(prefix="assay-hostile-") as tmp, mock.patch.dict(os.environ, CAPS):
        root = Path(tmp)
        engine = create_catalog_engine(f"sqlite:///{root / 'catalog.db'}")
        try:
            migrate(engine)
            seed(root, engine)
            outcomes = [attempt(h, root / "corpus", engine) for h in CORPUS]
        finally:
            engine.dispose()
    unclear = [o.name for o in outcomes if not o.clear]
    return {
        "tried": len(outcomes),
        "clear_errors": len(outcomes) - len(unclear),
        "written_anyway": sum(o.written for o in outcomes),
        "unclear": unclear,
    }


__all__ = ["CAPS", "CORPUS", "Hostile", "Outcome", "attempt", "campaign", "catalog_state", "files_under",
           "seed"]  # fmt: skip
