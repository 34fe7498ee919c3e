"""Which workspace a catalog belongs to: its id and the lake whose files its manifest lists.

A workspace is identified, not inferred from a folder. `assay init` writes the catalog's one
``workspace`` row; every command that opens the catalog then checks that the lake it was given is the
one that row names, before it writes anything. Without the check, a mistyped ``ASSAY_HOME`` beside a
shared catalog (``ASSAY_CATALOG_URL``) would store evidence in a lake the real workspace never reads,
and list it in the manifest the real workspace does read.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from assay.core.errors import ConfigError
from assay.core.redact import mask_url

from .engine import insert_ignoring_duplicates
from .tables import workspace

FIX = ("point ASSAY_HOME (or ASSAY_LAKE_URL) at the lake the catalog names, or ASSAY_CATALOG_URL at the "
       "catalog of the lake you meant")


@dataclass(frozen=True)
class Identity:
    """The workspace a catalog names."""

    workspace_id: str
    lake_url: str


def lake_identity(url: str, engine: sa.Engine) -> str:
    """The lake at ``url`` as the catalog at ``engine`` records it, one spelling per lake: any URL but a
    local one as given (without a trailing slash); a local path (or ``file://`` URL) absolute and resolved,
    except a lake inside the folder of a SQLite catalog file (the embedded default: both in ``ASSAY_HOME``),
    which is recorded relative to that folder, so a workspace folder can be moved or copied whole."""
    if url.startswith("file://"):
        url = url.removeprefix("file://")
    elif "://" in url:
        return url.rstrip("/")
    path = Path(url).expanduser().resolve()
    folder = _catalog_folder(engine)
    if folder is not None and path.is_relative_to(folder):
        return path.relative_to(folder).as_posix()
    return str(path)


def shown(lake: str, engine: sa.Engine) -> str:
    """A recorded lake as a person finds it: a relative one joined to its catalog's folder."""
    folder = _catalog_folder(engine)
    if "://" in lake or Path(lake).is_absolute() or folder is None:
        return mask_url(lake)
    return str(folder / lake)


def _catalog_folder(engine: sa.Engine) -> Path | None:
    """The folder of a SQLite catalog file; None for a server's catalog (PostgreSQL) or an in-memory one."""
    database = engine.url.database
    if engine.url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    return Path(database).expanduser().resolve().parent


def read_identity(conn: sa.Connection) -> Identity | None:
    """The workspace the catalog names, or None for a catalog `assay init` never recorded one in."""
    row = conn.execute(sa.select(workspace.c.workspace_id, workspace.c.lake_url)).first()
    return None if row is None else Identity(row.workspace_id, row.lake_url)


def record_identity(engine: sa.Engine, lake_url: str) -> Identity:
    """Name this catalog's workspace and lake (`assay init`): idempotent for the same lake, and a catalog that
    already names another lake is refused (:func:`check_identity`'s error)."""
    lake = lake_identity(lake_url, engine)
    with engine.begin() as conn:  # two inits at once: the first row wins, the other reads it
        conn.execute(insert_ignoring_duplicates(conn, workspace, ["slot"]).values(
            slot=1, workspace_id=uuid.uuid4().hex, lake_url=lake))
        row = conn.execute(sa.select(workspace.c.workspace_id, workspace.c.lake_url)).one()  # ours, or the first
    found = Identity(row.workspace_id, row.lake_url)
    _require_same(found, lake, engine)
    return found


def check_identity(engine: sa.Engine, lake_url: str) -> Identity | None:
    """Refuse a lake other than the one the catalog names (one small query). A catalog that names none
    (migrated without `assay init`, as the tests' catalogs are) is not checked."""
    with engine.connect() as conn:
        found = read_identity(conn)
    if found is not None:
        _require_same(found, lake_identity(lake_url, engine), engine)
    return found


def _require_same(found: Identity, lake: str, engine: sa.Engine) -> None:
    if found.lake_url != lake:
        catalog = engine.url.render_as_string(hide_password=True)
        raise ConfigError(
            f"the catalog {catalog} belongs to workspace {found.workspace_id}, whose lake is "
            f"{shown(found.lake_url, engine)}, not {shown(lake, engine)} (the lake ASSAY_HOME / ASSAY_LAKE_URL "
            f"name here): nothing was written; {FIX}"
        )


__all__ = ["Identity", "check_identity", "lake_identity", "read_identity", "record_identity", "shown"]
