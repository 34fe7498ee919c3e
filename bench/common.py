"""Timing, machine description and the results document shared by every benchmark."""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

WORK = Path(__file__).parent / ".work"


@dataclass
class Result:
    name: str
    value: float
    unit: str
    baseline: float | None
    ratio: float | None
    target: str
    met: bool
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def median_seconds(fn: Callable[[], Any], repeats: int = 3, setup: Callable[[], Any] | None = None) -> float:
    """Median wall time of ``fn`` over ``repeats`` runs (``setup`` runs untimed before each)."""
    times = []
    for _ in range(repeats):
        if setup:
            setup()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def machine() -> str:
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
        mem = f", {kb / 2**20:.0f} GiB"
    except OSError:
        pass
    return f"{os.cpu_count()} cores{mem}, {platform.machine()}, {platform.system()}, Python {platform.python_version()}"


def byte_compile_package() -> None:
    """Byte-compile Assay's sources, as installing a wheel does. An editable install compiles on first
    import, unless the environment says ``PYTHONDONTWRITEBYTECODE``: then every ``assay`` process the
    benchmarks start would compile some 170 modules again (0.15-0.2 s each time), a cost no installed
    copy pays. Only files whose source changed are compiled."""
    import compileall

    import assay

    root = Path(assay.__file__).resolve().parent.parent
    for folder in ("assay", "core", "storage", "adapters", "transforms", "flows", "fakes"):
        compileall.compile_dir(root / folder, quiet=1, workers=1)


def workdir(name: str) -> Path:
    path = WORK / name
    if path.exists():
        import shutil

        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def load_corpus(name: str) -> tuple[list[Any], list[Any]]:
    """(planted, look-alikes) from the secrets corpus ``tests/core/<name>.py``: the tests and the benchmark measure
    the same corpus, loaded by path because ``tests`` is not a package."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parent.parent / "tests" / "core" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = sys.modules.setdefault(name, importlib.util.module_from_spec(spec))
    if not hasattr(module, "PLANTED"):
        spec.loader.exec_module(module)
    return module.PLANTED, module.LOOK_ALIKES

