"""The catalog's listing readers and name lookups (`assay ls` and every "no such name" error), on each database."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from assay.core.errors import AmbiguousError, NotFoundError
from assay.flows.cli_ls import KINDS
from assay.flows.demo import DEMO
from assay.storage.catalog import listing
from assay.storage.catalog.assertions import criteria_spec
from assay.storage.catalog.load import load_bundle
from assay.storage.catalog.runs import find_suite


@pytest.fixture
def demo(engine: sa.Engine) -> sa.Engine:
    load_bundle(engine, DEMO / "bundle.yaml")
    return engine


def test_each_kind_lists_what_the_demo_bundle_loaded(demo: sa.Engine) -> None:
    with demo.connect() as conn:
        everything = listing.Scope.resolve(conn, None, None)
        assert tuple(listing.READERS) == KINDS  # `assay ls KIND` has a reader for each kind
        sizes = {kind: len(read(conn, everything)) for kind, read in listing.READERS.items()}
        assert sizes == {"teams": 2, "suites": 4, "cases": 9, "assertions": 26, "criteria": 12, "consumers": 3}
        one = listing.Scope.resolve(conn, None, "acme-plumbing/main-line")
        assert {a["of"] for a in listing.assertions(conn, one)} == {"main-line"}
        assert [s["suite"] for s in listing.suites(conn, listing.Scope.resolve(conn, "northside-hvac", None))] == [
            "northside-hvac/recorded-calls"]
        assert listing.overview(conn, one)["counts"]["assertion_versions"] == 5


def test_unknown_names_say_the_nearest_and_the_known(demo: sa.Engine) -> None:
    with demo.connect() as conn:
        with pytest.raises(NotFoundError) as suite:
            find_suite(conn, "main-lin")
        assert suite.value.nearest == ["acme-plumbing/main-line"] and len(suite.value.known) == 4
        with pytest.raises(NotFoundError) as team:
            listing.Scope.resolve(conn, "acme", None)
        assert team.value.nearest == ["acme-plumbing"]
        main_line = find_suite(conn, "acme-plumbing/main-line").suite_id
        with pytest.raises(NotFoundError) as consumer:
            criteria_spec(conn, main_line, "ci-gate")
        assert consumer.value.known == ["blueprint_ci", "nightly_sweep", "publish_gate"]
        assert consumer.value.nearest == ["blueprint_ci", "publish_gate"]
        with pytest.raises(NotFoundError, match="versions of publish_gate on acme-plumbing/main-line: v1"):
            criteria_spec(conn, main_line, "publish_gate", 7)


def test_a_suite_key_two_teams_share_is_ambiguous(demo: sa.Engine) -> None:
    with demo.connect() as conn:
        with pytest.raises(AmbiguousError, match="'main-line' names 2 suites") as caught:
            conn.execute(sa.text("UPDATE suites SET suite_key = 'main-line' WHERE suite_key = 'recorded-calls'"))
            find_suite(conn, "main-line")
        assert "acme-plumbing/main-line" in str(caught.value) and "northside-hvac/main-line" in str(caught.value)
