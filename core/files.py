"""Files as the product handles them: written whole (readers see the old text or the new, never a part), and
paths kept inside the folder they are relative to."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path, PurePosixPath


def replace_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it and an atomic rename; on any failure the
    temporary file is removed and ``path`` is as it was."""
    path = Path(path)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def inside(relative: str) -> str | None:
    """A relative POSIX path normalised (``./a/../b`` is ``b``), or None when it is absolute, empty, or climbs
    out of the folder it is relative to."""
    pure = PurePosixPath(relative)
    if pure.is_absolute():
        return None
    parts: list[str] = []
    for part in pure.parts:
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts) or None


__all__ = ["inside", "replace_text"]
