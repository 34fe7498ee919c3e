"""The models of every machine-readable document, and the JSON Schemas generated from them.

A document is an envelope (``schema``, ``revision``, ``stability``: :mod:`.documents`) around a body;
each body's model forbids unknown fields. The JSON Schemas under ``docs/schemas/`` are generated from
these models and must match them (a test checks it). Regenerate them after changing a model::

    python -m assay.core.document_models docs/schemas
"""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, TypeAdapter, create_model

from .document_calls import CallsImportDoc, CallsReviewDoc
from .document_catalog import LS_BODIES, InitDoc, LoadDoc, PlanDoc, VersionDoc
from .document_drill import DiffDoc, ShowDoc
from .document_exam_runs import ExamsDoc
from .document_exams import BlessDoc, CalibrateDoc, DistilDoc, ExportDoc, ReviewDoc, SessionsDoc
from .document_import import ImportConfigDoc
from .document_legacy import LegacyDoc
from .document_report import ReportDoc
from .document_rescore import RescoreDoc, WhatifDoc
from .document_runs import JudgeDoc, RejudgeDoc, RunDoc, RunsDoc, VerdictsDoc
from .document_server import DeployDoc, ServerStartDoc, ServerStatusDoc, ServerStopDoc
from .document_templates import TemplateApplyDoc, TemplateLsDoc
from .document_tools import FakeVendorsDoc, QueryDoc
from .document_upkeep import (
    BenchDoc,
    CollectDoc,
    DemoDoc,
    JudgeAgreementDoc,
    JudgeNoiseDoc,
    LakeCompactDoc,
    LakeMigrateDoc,
    LakeVacuumDoc,
    LakeVerifyDoc,
    ProjectDoc,
    ReapDoc,
)
from .documents import DOCUMENTS

BODIES: dict[str, tuple[type[BaseModel], ...]] = {
    "assay.init": (InitDoc,), "assay.load": (LoadDoc,), "assay.plan": (PlanDoc,), "assay.ls": LS_BODIES,
    "assay.run": (RunDoc,), "assay.runs": (RunsDoc,), "assay.verdicts": (VerdictsDoc,), "assay.judge": (JudgeDoc,),
    "assay.rejudge": (RejudgeDoc,), "assay.rescore": (RescoreDoc,), "assay.reap": (ReapDoc,),
    "assay.collect": (CollectDoc,), "assay.lake.migrate": (LakeMigrateDoc,), "assay.lake.compact": (LakeCompactDoc,),
    "assay.lake.vacuum": (LakeVacuumDoc,), "assay.lake.verify": (LakeVerifyDoc,), "assay.judge-agreement": (JudgeAgreementDoc,),
    "assay.judge-noise": (JudgeNoiseDoc,), "assay.demo": (DemoDoc,),
    "assay.show": (ShowDoc,), "assay.diff": (DiffDoc,), "assay.bench": (BenchDoc,),
    "assay.server.start": (ServerStartDoc,), "assay.server.stop": (ServerStopDoc,),
    "assay.server.status": (ServerStatusDoc,), "assay.deploy": (DeployDoc,),
    "assay.template": (TemplateApplyDoc,), "assay.template.ls": (TemplateLsDoc,), "assay.legacy": (LegacyDoc,),
    "assay.project": (ProjectDoc,), "assay.whatif": (WhatifDoc,), "assay.report": (ReportDoc,),
    "assay.calls.import": (CallsImportDoc,), "assay.calls.review": (CallsReviewDoc,),
    "assay.version": (VersionDoc,), "assay.sessions": (SessionsDoc,), "assay.bless": (BlessDoc,),
    "assay.distil": (DistilDoc,), "assay.review": (ReviewDoc,), "assay.export": (ExportDoc,),
    "assay.calibrate": (CalibrateDoc,), "assay.exams": (ExamsDoc,),
    "assay.import-config": (ImportConfigDoc,),
    "assay.fake-vendors": (FakeVendorsDoc,), "assay.query": (QueryDoc,),
}
"""Schema id -> its body model (several, told apart by their ``kind`` field, when the body varies)."""

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _enveloped(schema_id: str, body: type[BaseModel]) -> type[BaseModel]:
    revision, stability = DOCUMENTS[schema_id]
    return create_model(
        body.__name__.removesuffix("Doc") + "Document",
        __base__=body,
        __doc__=body.__doc__,
        schema_id=(Literal[schema_id], Field(alias="schema", description="The document's schema id.")),
        revision=(Literal[revision], Field(description="The schema's revision: it grows when the shape changes.")),
        stability=(Literal[stability], Field(description="experimental, stable or deprecated.")),
    )


@cache
def adapter(schema_id: str) -> TypeAdapter[Any]:
    """Validates a whole document (envelope and body) of ``schema_id``."""
    if schema_id not in BODIES:
        raise KeyError(f"no model for document {schema_id!r}; known: {', '.join(sorted(BODIES))}")
    models = [_enveloped(schema_id, body) for body in BODIES[schema_id]]
    if len(models) == 1:
        return TypeAdapter(models[0])
    return TypeAdapter(Annotated[Union[tuple(models)], Field(discriminator="kind")])  # noqa: UP007


def validate(document: dict[str, Any]) -> Any:
    """Check a document against the model its ``schema`` names; raises pydantic's ``ValidationError``."""
    return adapter(document["schema"]).validate_python(document)


def json_schema(schema_id: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a whole document of ``schema_id``."""
    body = adapter(schema_id).json_schema(by_alias=True)
    revision, _ = DOCUMENTS[schema_id]
    return {"$schema": DIALECT, **body, "title": f"{schema_id} revision {revision}"}


def rendered(schema_id: str) -> str:
    """The schema file's text, exactly as committed."""
    return json.dumps(json_schema(schema_id), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schemas(folder: Path) -> list[Path]:
    """Write ``<schema-id>.json`` for every document into ``folder``; return the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for schema_id in sorted(BODIES):
        path = folder / f"{schema_id}.json"
        path.write_text(rendered(schema_id))
        written.append(path)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/schemas")
    for path in write_schemas(target):
        print(path)
