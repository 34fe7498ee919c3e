"""The package layout and the dependency direction: flows -> adapters, transforms, storage -> core."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"core": "assay.core", "storage": "assay.storage", "adapters": "assay.adapters",
           "transforms": "assay.transforms", "flows": "assay.flows", "fakes": "assay.fakes"}

# What each package may import of ours. `storage` knows nothing of vendors (adapters); adapters and
# transforms never import each other.
ALLOWED = {
    "core": set(),
    "storage": {"core"},
    "adapters": {"core"},
    "transforms": {"core"},
    "flows": {"core", "storage", "adapters", "transforms", "fakes"},
    "fakes": set(),  # stands in for vendors: knows nothing of ours
}


def _modules() -> list[tuple[str, Path]]:
    return [(folder, path) for folder in FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))]


def _imports(folder: str, path: Path, root: Path = ROOT) -> set[str]:
    """The packages of ours (by folder name) that a module under ``root`` imports, absolute or relative."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's own package
                depth = len(path.relative_to(root / folder).parts) - 1
                if node.level > depth + 1:
                    found.add("<escapes its package>")
                continue
            names = [node.module or ""]
        for name in names:
            parts = name.split(".")
            if parts[0] == "assay" and len(parts) > 1 and parts[1] in FOLDERS:
                found.add(parts[1])
            elif parts[0] in FOLDERS:
                found.add(f"top-level {parts[0]}")
    return found - {folder}


@pytest.mark.parametrize("folder,path", _modules(), ids=lambda v: str(v).rsplit("/", 2)[-1] if isinstance(v, Path) else v)
def test_dependency_direction(folder: str, path: Path) -> None:
    bad = _imports(folder, path) - ALLOWED[folder]
    assert not bad, f"{path.relative_to(ROOT)} ({folder}) imports {sorted(bad)}; allowed: {sorted(ALLOWED[folder])}"


def test_the_direction_check_catches_a_violation(tmp_path: Path) -> None:
    # in a copy of the layout, not the repository: tests running beside this one read the package folders
    bad = tmp_path / "core" / "_probe_violation.py"
    bad.parent.mkdir()
    bad.write_text("from assay.storage import lake\nfrom ..flows import cli\n")
    assert _imports("core", bad, root=tmp_path) == {"storage", "<escapes its package>"}


def test_every_package_folder_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    for folder, package in FOLDERS.items():
        assert config["package-dir"][package] == folder
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            name = ".".join((package, *rel))
            assert name in listed, f"{init.parent.relative_to(ROOT)} is a package missing from pyproject's packages"
