"""Our reading of Hamming's test-run API, written as an OpenAPI 3.1 document.

Hamming publishes no reference for its test-run API. What is known comes from the workflow code
Hamming publishes for running tests from CI (the start request, the status poll, the results read) and
is summarised in the Hamming section of the vendor notes. This document writes that reading down once,
in the form the other fakes' published documents take, so the fake Hamming's answers are checked
against it and its wild modes (:mod:`.wild`) know which fields are optional. It is **not** Hamming's:
where it is wrong, a real Hamming will say so, and this is the one place to correct.

Only the three calls Assay makes are here; nothing else is documented, so nothing else is used.
"""

from __future__ import annotations

from typing import Any

from .openapi import OpenApi

_STR = {"type": "string"}
_RUN_STATUS = {"type": "string", "enum": ["CREATED", "RUNNING", "SCORING", "SCORING_FAILED", "COMPLETED", "FINISHED",
                                         "FAILED", "CANCELED"]}
_SCHEMAS: dict[str, Any] = {
    "StartRequest": {"type": "object", "required": ["agentId", "phoneNumbers", "testConfigurations"], "properties": {
        "agentId": _STR, "phoneNumbers": {"type": "array", "minItems": 1, "items": _STR},
        "testConfigurations": {"type": "array", "minItems": 1, "items": {"$ref": "#/components/schemas/TestConfiguration"}},
        "samplingCount": {"type": "integer", "minimum": 1}, "selectedAssertionIds": {"type": "array", "items": _STR}}},
    "TestConfiguration": {"type": "object", "properties": {
        "testCaseId": _STR, "tagId": _STR, "overrides": {"type": "object"}, "scenarioFacts": {"type": "object"},
        "persona": {"type": "object", "required": ["name", "prompt"],
                    "properties": {"name": _STR, "voice": _STR, "prompt": _STR}}}},
    "StartAnswer": {"type": "object", "required": ["testRunId", "testCaseRuns"], "properties": {
        "testRunId": _STR, "resultsUrl": _STR,
        "testCaseRuns": {"type": "array", "items": {"type": "object", "required": ["id"], "properties": {
            "id": _STR, "testCaseId": _STR, "status": _STR}}}}},
    "StatusAnswer": {"type": "object", "required": ["status"], "properties": {"status": _RUN_STATUS}},
    "ResultsAnswer": {"type": "object", "required": ["summary", "results"], "properties": {
        "summary": {"type": "object", "required": ["id", "status", "totalTests", "passedTests", "failedTests"], "properties": {
            "id": _STR, "status": _RUN_STATUS, "totalTests": {"type": "integer"}, "passedTests": {"type": "integer"},
            "failedTests": {"type": "integer"},
            "assertions": {"type": "object", "required": ["overallScore"], "properties": {
                "overallScore": {"type": "number", "minimum": 0, "maximum": 100}, "categories": {"type": "array"}}}}},
        "results": {"type": "array", "items": {"$ref": "#/components/schemas/CaseResult"}}}},
    "CaseResult": {"type": "object", "required": ["id", "testCaseId", "status", "assertionResults"], "properties": {
        "id": _STR, "testCaseId": _STR, "status": {"type": "string", "enum": ["PASSED", "FAILED", "PENDING", "ERROR"]},
        "assertionResults": {"type": "array", "items": {"type": "object", "required": ["assertionId", "assertionName", "status"], "properties": {
            "assertionId": _STR, "assertionName": _STR,
            "status": {"type": "string", "enum": ["PASSED", "FAILED", "ERROR"]}, "reason": _STR}}},
        "metrics": {"type": "object", "properties": {
            "latencyP50": {"type": "number"}, "latencyP90": {"type": "number"}, "interruptionCount": {"type": "integer"}}},
        "transcript": _STR, "duration": {"type": "number"}, "recordingUrl": _STR}},
}


def _answer(schema: str, status: str = "200") -> dict[str, Any]:
    return {status: {"description": schema, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}}}


READING: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Hamming test runs, as Assay reads Hamming's CI workflow code (not Hamming's document)", "version": "0"},
    "paths": {
        "/test-runs/test-inbound-agent": {"post": {
            "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/StartRequest"}}}},
            "responses": {**_answer("StartAnswer", "200"), **_answer("StartAnswer", "201")}}},
        "/test-runs/{id}/status": {"get": {"responses": _answer("StatusAnswer")}},
        "/test-runs/{id}/results": {"get": {"responses": _answer("ResultsAnswer")}},
    },
    "components": {"schemas": _SCHEMAS},
}


def hamming_reading() -> OpenApi:
    """:data:`READING` as an :class:`~.openapi.OpenApi` (what the fake's answers and wild modes follow)."""
    return OpenApi.of(READING, "hamming-reading")


__all__ = ["READING", "hamming_reading"]
