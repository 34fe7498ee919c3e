"""Machine-readable documents: every one carries a schema id, a revision and a stability tier.

Each document's body has a model in :mod:`.document_models`, from which its JSON Schema under
``docs/schemas/`` is generated. Changing a body's shape bumps its revision in :data:`_REVISIONS`.
"""

from __future__ import annotations

from typing import Any, Literal

Stability = Literal["experimental", "stable", "deprecated"]

_COMMANDS = (
    "run", "runs", "load", "init", "demo", "reap", "bench", "judge", "rejudge", "rescore", "verdicts", "plan",
    "lake.migrate", "lake.vacuum", "lake.compact", "lake.verify", "collect", "judge-agreement", "judge-noise",
    "ls", "show", "diff", "server.start", "server.stop", "server.status",
    "deploy", "template", "template.ls", "legacy", "project", "whatif", "report", "calls.import", "calls.review", "version",
    "sessions", "bless", "distil", "review", "export", "calibrate", "exams", "import-config",
    "fake-vendors", "query",
)

_REVISIONS = {"run": 3, "runs": 2, "bench": 2, "verdicts": 3, "judge": 3, "rescore": 4, "ls": 4, "plan": 3,
              "whatif": 2, "demo": 2, "judge-agreement": 2, "reap": 2}
"""Documents past their first revision. ``assay.run`` 2: each consumer's ``verdicts``. ``assay.verdicts``,
``assay.judge`` and ``assay.rescore`` 2: each verdict says what it counted (``counted``, ``excluded``,
``case_runs``, ``case_runs_counted``); ``verdicts --cases`` names each case run and the results that
decided it. ``assay.ls`` 2: each suite's ``tags``. ``assay.plan`` 2: each suite's
``in_place`` edits, which need nothing redone; 3: ``templates``, each changed template and the cases made from it.
Repeats: a run's ``repeat`` and ``budget`` (``assay.runs`` 2, ``assay.run`` 3, ``assay.demo`` 2); a verdict's
``series``, each case decided over its replays (``assay.verdicts``, ``assay.judge`` 3); a criteria's
``pass_rate`` (``assay.rescore``, ``assay.ls`` 3, ``assay.whatif`` 2). ``assay.judge-agreement`` 2: ``unparsed``,
the undetermined items whose answer could not be read as a verdict. ``assay.rescore`` 4: each run's ``runner``,
the runs oldest first. ``assay.ls`` 4: each suite's declared ``runners``. ``assay.reap`` 2:
``finalisation_deferred``, the released runs left for the next reap by a failure that passes."""

DOCUMENTS: dict[str, tuple[int, Stability]] = {
    f"assay.{name}": (_REVISIONS.get(name, 1), "experimental") for name in _COMMANDS
}
"""Known document schemas: id -> (current revision, stability)."""


def document(schema: str, body: dict[str, Any]) -> dict[str, Any]:
    """Wrap ``body`` with its schema id, revision and stability."""
    revision, stability = DOCUMENTS[schema]
    return {"schema": schema, "revision": revision, "stability": stability, **body}
