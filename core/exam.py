"""The exam directory: what a blessed coding-agent session becomes, committed with the person's code.

One directory per exam (``.assay/exams/<slug>/``)::

    exam.toml        what to replay with: runner and version, model, workspace pin, environment
                     fingerprint, tool allowlist, caps, and the session it came from (:class:`ExamSpec`)
    instruction.md   the ask to replay
    workspace.patch  the person's uncommitted state at the start (absent when there was none)
    assertions.toml  tiered assertions, each citing its evidence; drafts until a person accepts them
    verify.sh        optional: exits 0 when the work holds, 1 when it does not, anything else when the
                     check itself failed

:func:`load_exam` reads it all or refuses with every problem, naming the file and the field;
:func:`write_exam` writes a whole directory at once (built beside it, then moved into place).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
import tomllib
import unicodedata
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .bundle_base import Identifier
from .bundle_input import dotted
from .errors import BundleError, SchemaVersionError
from .exam_checks import CHECK_TIERS, CHECKS, Check, Tier, check_params
from .files import replace_text
from .toml_write import toml_dumps

__all__ = [
    "ASSERTIONS_FILE", "EXAM_FILE", "Exam", "ExamAssertion", "ExamAssertions", "ExamCaps", "ExamEnvironment",
    "ExamRunner", "ExamSource", "ExamSpec", "ExamTools", "ExamWorkspace", "INSTRUCTION_FILE", "PATCH_FILE",
    "VERIFY_FILE", "VERIFY_KEY", "exam_digest", "load_exam", "read_assertions", "slug_like", "unreviewed", "write_assertions",
    "write_exam",
]  # fmt: skip

EXAM_FILE, INSTRUCTION_FILE, ASSERTIONS_FILE = "exam.toml", "instruction.md", "assertions.toml"
PATCH_FILE, VERIFY_FILE = "workspace.patch", "verify.sh"
VERIFY_KEY = "verify_sh"
"""The assertion key an exam's ``verify.sh`` is judged under, in calibration and in the record alike."""
EXAM_SCHEMA, ASSERTIONS_SCHEMA = "assay.exam", "assay.exam.assertions"
REVISION = 1


def _file_name(value: str) -> str:
    if value in ("", ".", "..") or "/" in value or "\\" in value:
        raise ValueError(f"{value!r} is not a file name in the exam directory; name a file such as {PATCH_FILE!r}")
    return value


_Text = Annotated[str, Field(min_length=1)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class ExamRunner(_Model):
    """The harness that replays the exam."""

    name: _Text
    """The harness's capture/run adapter name."""
    version: str | None = None
    """The harness version the session ran with."""


class ExamWorkspace(_Model):
    """Where a replay starts: a commit, plus the person's uncommitted state as a patch."""

    commit: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")]
    """The commit to check out (40 hex digits)."""
    patch: Annotated[str, AfterValidator(_file_name)] | None = None
    """The patch file in the exam directory (``git apply`` it on the commit), or absent when there is none."""
    untracked: tuple[_Text, ...] = ()
    """Paths the patch adds that git did not track."""


class ExamEnvironment(_Model):
    """The toolchain the session ran in; a replay in a different one is stale, not failed."""

    fingerprint: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]
    """``sha256:`` of the canonical JSON of :attr:`parts`."""
    parts: dict[str, str] = Field(default_factory=dict)
    """What went into the fingerprint: harness version, os, python, git, and the sha256 of each lockfile or
    manifest at the repository root."""


class ExamTools(_Model):
    allow: tuple[_Text, ...] = ()
    """The tools a replay may use: those the session used."""


class ExamCaps(_Model):
    """Hard limits on a replay (each absent when the session gave nothing to base it on)."""

    max_turns: Annotated[int, Field(gt=0)] | None = None
    max_budget_usd: Annotated[float, Field(gt=0)] | None = None
    max_wall_seconds: Annotated[int, Field(gt=0)] | None = None


class ExamSource(_Model):
    """The blessed session the exam was distilled from."""

    session_id: _Text
    harness: _Text
    blessed_at: datetime | None = None
    """When the session was made the standard (distilled into this exam), UTC."""
    turns: Annotated[int, Field(ge=0)] | None = None
    """The session's assistant turns."""
    cost_usd: Annotated[float, Field(ge=0)] | None = None
    """What the session cost, when the harness recorded it."""


class ExamSpec(_Model):
    """``exam.toml``."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    schema_id: Literal["assay.exam"] = Field(EXAM_SCHEMA, alias="schema")
    """The format: ``assay.exam``."""
    revision: Literal[1] = REVISION
    slug: Identifier
    """The exam's name (its directory's name)."""
    runner: ExamRunner
    model: str | None = None
    """The model the session used most."""
    workspace: ExamWorkspace
    environment: ExamEnvironment
    tools: ExamTools = Field(default_factory=ExamTools)
    caps: ExamCaps = Field(default_factory=ExamCaps)
    source: ExamSource


class ExamAssertion(_Model):
    """One ``[[assertion]]`` of ``assertions.toml``."""

    key: Identifier
    """The assertion's name, unique in the exam."""
    tier: Tier
    check: Check
    """The mechanism that evaluates it; it decides the tier (:data:`~.exam_checks.CHECK_TIERS`)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """The check's parameters (:data:`~.exam_checks.CHECK_PARAMS`)."""
    status: Literal["draft", "accepted"] = "draft"
    """``draft`` until a person accepts it (``assay review``); an exam with drafts does not run."""
    evidence: tuple[str, ...] = ()
    """What it came from: call ids, commands and their exit codes, turn numbers."""
    note: str | None = None

    @field_validator("params")
    @classmethod
    def _params_fit_the_check(cls, params: dict[str, Any], info: Any) -> dict[str, Any]:
        check = info.data.get("check")
        return check_params(check, params) if check in CHECKS else params

    @model_validator(mode="after")
    def _tier_fits_the_check(self) -> ExamAssertion:
        tier = CHECK_TIERS[self.check]
        if self.tier != tier:
            raise ValueError(f"check {self.check!r} belongs to tier {tier!r}, not {self.tier!r}; set tier = {tier!r}")
        return self


class ExamAssertions(_Model):
    """``assertions.toml``."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    schema_id: Literal["assay.exam.assertions"] = Field(ASSERTIONS_SCHEMA, alias="schema")
    revision: Literal[1] = REVISION
    assertion: tuple[ExamAssertion, ...] = ()

    @field_validator("assertion")
    @classmethod
    def _keys_are_unique(cls, assertions: tuple[ExamAssertion, ...]) -> tuple[ExamAssertion, ...]:
        keys = [a.key for a in assertions]
        twice = [k for k in dict.fromkeys(keys) if keys.count(k) > 1]
        if twice:
            raise ValueError(f"assertion keys must be unique; repeated: {', '.join(twice)}; rename or delete the "
                             "repeats")  # fmt: skip
        return assertions


class Exam(BaseModel):
    """A loaded exam directory."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Path
    """The exam directory."""
    spec: ExamSpec
    instruction: str
    assertions: tuple[ExamAssertion, ...]
    patch_path: Path | None = None
    verify_path: Path | None = None


def _read_toml(path: Path, schema: str) -> dict[str, Any]:
    file = str(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        what = "the file is missing; every exam directory has one (`assay distil` writes it)"
        raise BundleError(file, [("", what)]) from None
    except UnicodeDecodeError as exc:
        raise BundleError(file, [("", f"not valid UTF-8 at byte {exc.start}; save it as UTF-8")]) from None
    except tomllib.TOMLDecodeError as exc:
        raise BundleError(file, [("", f"not valid TOML: {exc}")]) from None
    found = raw.get("schema")
    if found != schema:
        what = "is missing" if found is None else f"is {found!r}, not {schema!r}"
        raise BundleError(file, [("schema", f"{what}; start the file with schema = {schema!r}")])
    if raw.get("revision", REVISION) != REVISION:
        raise SchemaVersionError(f"{file}: revision", raw.get("revision"), [REVISION])
    return raw


def _validate(model: type[BaseModel], raw: dict[str, Any], path: Path) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            where = dotted(tuple(err["loc"]))
            if err["type"] == "extra_forbidden":
                problems.append((where, "unknown field; remove or rename it"))
            elif err["type"] == "missing":
                problems.append((where, "required field is missing; add it"))
            elif err["type"] == "literal_error":
                problems.append((where, f"{err['input']!r} is not allowed; {err['msg'].lower()}"))
            elif err["type"] == "value_error":
                problems.append((where, err["msg"].removeprefix("Value error, ")))
            else:
                problems.append((where, f"{err['msg']} (got {_short(err['input'])})"))
        raise BundleError(str(path), problems) from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def read_assertions(path: Path) -> ExamAssertions:
    """``assertions.toml`` at ``path``, validated; :class:`BundleError` names the file and each bad field."""
    return _validate(ExamAssertions, _read_toml(path, ASSERTIONS_SCHEMA), path)


def load_exam(path: Path) -> Exam:
    """The exam directory at ``path``: its spec, instruction and assertions, checked against each other."""
    path = Path(path)
    if not path.is_dir():
        raise BundleError(str(path), [("", "no exam directory here; name a directory `assay distil` wrote")])
    spec: ExamSpec = _validate(ExamSpec, _read_toml(path / EXAM_FILE, EXAM_SCHEMA), path / EXAM_FILE)
    if spec.slug != path.name:
        raise BundleError(str(path / EXAM_FILE), [("slug", f"{spec.slug!r} does not name its directory "
                                                           f"{path.name!r}; make them the same")])  # fmt: skip
    instruction_path = path / INSTRUCTION_FILE
    try:
        instruction = instruction_path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError) as exc:
        what = "the file is missing" if isinstance(exc, FileNotFoundError) else "not valid UTF-8"
        raise BundleError(str(instruction_path), [("", f"{what}; it holds the ask to replay")]) from None
    if not instruction.strip():
        raise BundleError(str(instruction_path), [("", "the file is empty; write the ask to replay in it")])
    patch_path = None
    if spec.workspace.patch is not None:
        patch_path = path / spec.workspace.patch
        if not patch_path.is_file():
            raise BundleError(str(path / EXAM_FILE), [("workspace.patch", f"names {spec.workspace.patch!r}, which is "
                                                       "not in the exam directory; restore it or remove the field")])
    assertions = read_assertions(path / ASSERTIONS_FILE).assertion
    verify_path = path / VERIFY_FILE if (path / VERIFY_FILE).is_file() else None
    return Exam(path=path, spec=spec, instruction=instruction, assertions=assertions, patch_path=patch_path,
                verify_path=verify_path)


def exam_digest(path: Path) -> str:
    """``sha256:<hex>`` of the exam directory's files (those of them that exist): the sha256 of the sorted
    (name, sha256 of its bytes) pairs. Any edit to the spec, the ask, the assertions, the patch or
    ``verify.sh`` changes it; other files beside them (``calibration.toml``) do not."""
    pairs = []
    for name in sorted((EXAM_FILE, INSTRUCTION_FILE, ASSERTIONS_FILE, PATCH_FILE, VERIFY_FILE)):
        file = Path(path) / name
        if file.is_file():
            pairs.append([name, hashlib.sha256(file.read_bytes()).hexdigest()])
    return "sha256:" + hashlib.sha256(json.dumps(pairs, separators=(",", ":")).encode()).hexdigest()


def unreviewed(exam: Exam) -> list[str]:
    """The keys of the exam's assertions still in draft, in file order."""
    return [a.key for a in exam.assertions if a.status == "draft"]


def _assertions_toml(assertions: tuple[ExamAssertion, ...] | list[ExamAssertion]) -> str:
    document = ExamAssertions(assertion=tuple(assertions)).model_dump(mode="json", exclude_none=True)
    return toml_dumps(document)


def write_assertions(path: Path, assertions: tuple[ExamAssertion, ...] | list[ExamAssertion]) -> None:
    """Write ``assertions.toml`` at ``path`` atomically (a temporary file beside it, then replaced)."""
    replace_text(path, _assertions_toml(assertions))


def write_exam(path: Path, spec: ExamSpec, instruction: str, assertions: list[ExamAssertion], *,
               patch: bytes | None = None, verify: str | None = None, force: bool = False) -> Path:
    """Write a whole exam directory at ``path``, all or nothing: built in a temporary directory beside it,
    then moved into place. An existing directory is replaced only when ``force``; else :class:`FileExistsError`.
    ``patch`` is written to ``spec.workspace.patch``; ``verify`` becomes an executable ``verify.sh``."""
    path = Path(path)
    if path.exists() and not force:
        raise FileExistsError(path)
    if (patch is None) != (spec.workspace.patch is None):
        raise ValueError("workspace.patch must name a file exactly when there is a patch to write")
    path.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        (build / EXAM_FILE).write_text(toml_dumps(spec.model_dump(mode="json", exclude_none=True)), encoding="utf-8")
        (build / INSTRUCTION_FILE).write_text(instruction if instruction.endswith("\n") else instruction + "\n",
                                              encoding="utf-8")  # fmt: skip
        (build / ASSERTIONS_FILE).write_text(_assertions_toml(assertions), encoding="utf-8")
        if patch is not None and spec.workspace.patch is not None:
            (build / spec.workspace.patch).write_bytes(patch)
        if verify is not None:
            (build / VERIFY_FILE).write_text(verify, encoding="utf-8")
            (build / VERIFY_FILE).chmod(0o755)
        build.chmod(0o755)
        if path.exists():
            shutil.rmtree(path)
        build.rename(path)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    return path


def slug_like(text: str) -> str:
    """``text`` folded into identifier characters, accents dropped (may be empty; callers check)."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", plain.lower()).strip("-")
