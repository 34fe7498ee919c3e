"""No harness is named outside the adapters: core, storage, transforms and flows read only a Session.

Every capture adapter's ``name`` and ``aliases`` are the words that name its harness. None may appear (as a
word, in any case) in a module of ``core/``, ``storage/``, ``transforms/``, ``flows/`` or the ``assay``
package's ``__init__``: a harness there is only a value in ``Session.harness``.
"""

from __future__ import annotations

import re
from pathlib import Path

from assay.adapters.capture import CAPTURE_ADAPTERS

ROOT = Path(__file__).resolve().parents[1]
NEUTRAL_FOLDERS = ("core", "storage", "transforms", "flows")


def _harness_words() -> set[str]:
    return {word.lower() for adapter in CAPTURE_ADAPTERS.values() for word in (adapter.name, *adapter.aliases)}


def _neutral_modules(root: Path) -> list[Path]:
    modules = [path for folder in NEUTRAL_FOLDERS for path in sorted((root / folder).rglob("*.py"))]
    return modules + [root / "assay" / "__init__.py"]


def offences(root: Path, words: set[str]) -> list[str]:
    """``file:line: word`` for each harness word in a neutral module under ``root``."""
    pattern = re.compile(r"\b(" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + r")\b",
                         re.IGNORECASE)
    found = []
    for path in _neutral_modules(root):
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for match in pattern.finditer(line):
                found.append(f"{path.relative_to(root)}:{number}: {match.group(0)}")
    return found


def test_every_adapter_names_its_harness() -> None:
    words = _harness_words()
    assert all(adapter.name.lower() in words for adapter in CAPTURE_ADAPTERS.values())
    assert all(w and " " not in w for w in words)


def test_no_neutral_module_names_a_harness() -> None:
    found = offences(ROOT, _harness_words())
    assert not found, "harness names outside adapters/ (use Session.harness instead):\n" + "\n".join(found)


def test_the_check_catches_a_harness_name(tmp_path: Path) -> None:
    word = sorted(_harness_words())[0]
    (tmp_path / "flows").mkdir()
    (tmp_path / "assay").mkdir()
    (tmp_path / "assay" / "__init__.py").write_text('"""Assay."""\n')
    probe = tmp_path / "flows" / "probe.py"
    probe.write_text(f'"""A flow."""\n\nHARNESS = "{word.upper()}"\nsubagent_word = "{word}_ish_not"  # kept apart\n')
    assert offences(tmp_path, {word}) == [f"flows/probe.py:3: {word.upper()}"]
