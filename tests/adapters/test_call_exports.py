"""Vendors' call exports read as call-set lines: every shape a vendor sends (one object, a list, JSON Lines, its
webhook bodies) reads as the same calls; timings, tool calls paired with their results, the vendors' own verdicts
under the runners' evaluator names; costs in the vendor's own unit; bad records and broken files named where
they break."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assay.adapters.call_exports import FORMATS, read_export
from assay.core.callset import check_line
from assay.core.errors import CallExportError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "calls"
CASES = {"water-heater-outside-area", "no-heat-elderly-caller", "maintenance-plan-question", "angry-billing-dispute"}


def _calls(vendor: str, name: str) -> dict:
    return {c.line["call_id"]: c for c in read_export(vendor, FIXTURES / name)}


@pytest.mark.parametrize(("vendor", "name"), [
    ("vapi", "vapi-calls.json"), ("vapi", "vapi-end-of-call-report.json"), ("hamming", "hamming-results.json"),
    ("elevenlabs", "elevenlabs-conversations.json"), ("elevenlabs", "elevenlabs-post-call-transcription.json")])
def test_every_line_is_a_valid_call_set_line(vendor: str, name: str) -> None:
    for call in _calls(vendor, name).values():
        assert check_line({**call.line, "case": "no-heat-elderly-caller"}, CASES) == []
        assert call.line["provider"] == vendor and call.line["call_id"] == f"{vendor}-{call.line['provider_ref']}"


def test_vapi_turns_end_when_they_were_spoken_and_tools_pair_with_results() -> None:
    call = _calls("vapi", "vapi-calls.json")["vapi-5b2d0e7a-0c39-4f7e-9a55-2f7d1c6b8e41"]
    caller = [t for t in call.line["transcript"] if t["role"] == "caller"][0]
    assert caller["t"] == 5.1 and caller["end_t"] == pytest.approx(9.3)  # endTime - time, in milliseconds
    assert call.line["tool_calls"] == [{"name": "check_service_area", "arguments": {"zip": "60827"}, "t": 15.9,
                                        "result": {"in_area": False, "nearest_partner": "Calumet Plumbing"},
                                        "is_error": False}]
    assert call.line["duration_ms"] == 68500 and call.verdict == "pass" and call.facts == {"outside_zip": "60827"}
    assert call.line["provider_payload"]["assistantOverrides"]["server"]["secret"] == "[redacted]"


def test_elevenlabs_turns_have_no_invented_end_and_tools_pair_across_turns() -> None:
    call = _calls("elevenlabs", "elevenlabs-conversations.json")["elevenlabs-conv_01jdb7f3g5h7j9k1l3m5n7p9q1"]
    assert all("end_t" not in t or t["end_t"] is None for t in call.line["transcript"])
    assert call.line["tool_calls"][0]["result"] == {"in_area": False}
    assert {(e["evaluator"], e["verdict"]) for e in call.line["evaluations"]} == {
        ("elevenlabs:analysis", "fail"), ("elevenlabs:criteria", "fail")}
    assert call.verdict == "fail" and call.facts == {"outside_zip": "60827"}


def test_a_vendor_side_failure_is_an_error_line() -> None:
    failed = _calls("hamming", "hamming-results.json")["hamming-tcr_f04c8e3b"]
    assert failed.verdict == "error" and "ERROR" in failed.line["error"]


def test_a_bad_record_is_named_with_its_field(tmp_path: Path) -> None:
    records = json.loads((FIXTURES / "elevenlabs-conversations.json").read_text())
    records[1]["transcript"][0]["role"] = "caller"
    bad = tmp_path / "conversations.json"
    bad.write_text(json.dumps(records))
    with pytest.raises(CallExportError, match=r"record 2 \(conv_01jdb7f3g5h7j9k1l3m5n7p9q1\): transcript: .*turn 0"):
        read_export("elevenlabs", bad)


# ------------------------------------------------------------------------------------ shapes

def _fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def _jsonl(tmp_path: Path, values: list[Any]) -> Path:
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in values))
    return path


def _json(tmp_path: Path, value: Any) -> Path:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(value, indent=2))
    return path


_HAMMING = _fixture("hamming-results.json")
_REPORT = _fixture("vapi-end-of-call-report.json")
_POST_CALL = _fixture("elevenlabs-post-call-transcription.json")
SHAPES: dict[str, dict[str, Callable[[Path], Path]]] = {
    "vapi": {
        "object": lambda tmp: FIXTURES / "vapi-call.json",
        "list": lambda tmp: FIXTURES / "vapi-calls.json",
        "json-lines": lambda tmp: _jsonl(tmp, [_fixture("vapi-call.json"), *_fixture("vapi-calls.json")]),
        "webhook": lambda tmp: FIXTURES / "vapi-end-of-call-report.json",
        "webhook-message": lambda tmp: _json(tmp, _REPORT["message"]),
        "webhook-lines": lambda tmp: _jsonl(tmp, [_REPORT, *_fixture("vapi-calls.json")]),
    },
    "elevenlabs": {
        "object": lambda tmp: FIXTURES / "elevenlabs-conversation.json",
        "list": lambda tmp: FIXTURES / "elevenlabs-conversations.json",
        "json-lines": lambda tmp: _jsonl(tmp, _fixture("elevenlabs-conversations.json")),
        "webhook": lambda tmp: FIXTURES / "elevenlabs-post-call-transcription.json",
        "webhook-lines": lambda tmp: _jsonl(tmp, [_POST_CALL, *_fixture("elevenlabs-conversations.json")]),
        "webhook-list": lambda tmp: _json(tmp, [_POST_CALL, _POST_CALL | {"data": _fixture(
            "elevenlabs-conversations.json")[0]}]),
    },
    "hamming": {
        "object": lambda tmp: _json(tmp, _HAMMING["results"][0]),
        "list": lambda tmp: _json(tmp, _HAMMING["results"]),
        "json-lines": lambda tmp: _jsonl(tmp, _HAMMING["results"]),
        "envelope": lambda tmp: FIXTURES / "hamming-results.json",
        "envelope-lines": lambda tmp: _jsonl(tmp, [_HAMMING]),
    },
}
"""Per vendor, every shape its export may take, each a file of calls that also come as the vendor's plain record."""
PLAIN = {"vapi": ["vapi-call.json", "vapi-calls.json"],
         "elevenlabs": ["elevenlabs-conversation.json", "elevenlabs-conversations.json"],
         "hamming": ["hamming-results.json"]}
"""The vendor's plain records (GET responses): what every other shape must read as."""


def _lines(vendor: str, path: Path) -> dict[str, dict[str, Any]]:
    """Each call's line without its payload (which keeps the object as received: a webhook body whole)."""
    return {c.line["call_id"]: {k: v for k, v in c.line.items() if k != "provider_payload"}
            for c in read_export(vendor, path)}


@pytest.mark.parametrize(("vendor", "shape"), [(v, s) for v, shapes in SHAPES.items() for s in shapes])
def test_every_shape_of_an_export_reads_as_the_vendors_plain_records(vendor: str, shape: str, tmp_path: Path) -> None:
    plain = {k: v for name in PLAIN[vendor] for k, v in _lines(vendor, FIXTURES / name).items()}
    got = _lines(vendor, SHAPES[vendor][shape](tmp_path))
    assert got and all(got[k] == plain[k] for k in got), shape
    for line in got.values():
        assert check_line({**line, "case": "no-heat-elderly-caller"}, CASES) == []


@pytest.fixture(scope="module")
def vapi_api() -> Any:
    """VAPI's published document, with its ``ServerMessage`` (a webhook's body) as the request of a path of ours."""
    import gzip

    from assay.fakes.openapi import OpenApi, vapi_document

    with gzip.open(vapi_document().path, "rt", encoding="utf-8") as fh:
        raw = json.load(fh)
    body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ServerMessage"}}}}
    return OpenApi.of({**raw, "paths": {**raw["paths"], "/webhook": {"post": {"requestBody": body}}}})


@pytest.mark.parametrize(("name", "operation"), [
    ("vapi-call.json", ("GET", "/call/{id}")), ("vapi-calls.json", ("GET", "/call")),
    ("vapi-end-of-call-report.json", ("POST", "/webhook")), ("vapi-status-update.json", ("POST", "/webhook")),
])
def test_the_vapi_fixtures_are_what_vapis_document_declares(vapi_api: Any, name: str, operation: tuple) -> None:
    body = _fixture(name)
    method, path = operation
    problems = vapi_api.problems(method, path, body) if method == "POST" else vapi_api.response_problems(
        method, path, 200, body)
    assert problems == []
    if method == "POST":  # the document's message requires its artifact: the check can fail
        del body["message"]["artifact" if "artifact" in body["message"] else "type"]
        assert vapi_api.problems(method, path, body) != []


@pytest.mark.parametrize(("vendor", "name", "kept"), [
    ("vapi", "vapi-end-of-call-report.json", ("message", "phoneNumber", "number")),
    ("elevenlabs", "elevenlabs-post-call-transcription.json", ("event_timestamp",)),
])
def test_a_webhook_body_is_kept_whole_and_redacted(vendor: str, name: str, kept: tuple[str, ...]) -> None:
    (call,) = read_export(vendor, FIXTURES / name)
    payload, body = call.line["provider_payload"], _fixture(name)
    for key in kept:
        payload, body = payload[key], body[key]
    assert payload == body
    assert "twilio-auth-token-not-real" not in json.dumps(call.line)


@pytest.mark.parametrize(("vendor", "name", "said"), [
    ("vapi", "vapi-status-update.json", ["the object: message.type: a 'status-update' server message carries no "
                                         "finished call; only end-of-call-report messages do"]),
    ("elevenlabs", "elevenlabs-other-webhooks.jsonl", [
        "the object on line 1: type: a 'post_call_audio' webhook body carries no conversation",
        "the object on line 2: type: a 'call_initiation_failure' webhook body carries no conversation",
        "only post_call_transcription bodies do"]),
    ("elevenlabs", "elevenlabs-conversations-list.json", [
        "the conversations list (GET /v1/convai/conversations): summaries without transcripts; export each "
        "conversation with GET /v1/convai/conversations/{id}"]),
    ("hamming", "vapi-calls.json", ["record 1 (5b2d0e7a-0c39-4f7e-9a55-2f7d1c6b8e41): testCaseId: expected the id of "
                                    "the test case", "expected a test run's results"]),
])
def test_what_carries_no_call_is_refused_saying_what_to_export(vendor: str, name: str, said: list[str]) -> None:
    with pytest.raises(CallExportError) as info:
        read_export(vendor, FIXTURES / name)
    assert info.value.file == str(FIXTURES / name)
    for words in said:
        assert words in str(info.value)


# ------------------------------------------------------------------------------------ costs

@pytest.mark.parametrize(("vendor", "name", "call_id", "cost"), [
    ("vapi", "vapi-call.json", "vapi-3e8a61c4-2f0b-4d19-b7e5-90c1d4a6f2b8", (0.1968, 0.1968, "USD")),
    ("vapi", "vapi-end-of-call-report.json", "vapi-3e8a61c4-2f0b-4d19-b7e5-90c1d4a6f2b8", (0.1968, 0.1968, "USD")),
    # a 75-second conversation: 713 credits, and no dollar figure at all
    ("elevenlabs", "elevenlabs-conversation.json", "elevenlabs-conv_01jdc4r6t8v0w2x4y6z8a0b2c4", (None, 713, "credits")),
    ("elevenlabs", "elevenlabs-post-call-transcription.json", "elevenlabs-conv_01jdc4r6t8v0w2x4y6z8a0b2c4",
     (None, 713, "credits")),
    # metadata.cost_fiat is ElevenLabs' own dollar figure: it, not the credits, is cost_usd
    ("elevenlabs", "elevenlabs-conversations.json", "elevenlabs-conv_01jdb2m4n6p8q0r2s4t6v8w0x2", (0.0831, 456, "credits")),
    ("hamming", "hamming-results.json", "hamming-tcr_5e1a90b7", (None, None, None)),
])
def test_costs_stay_in_the_vendors_own_unit(vendor: str, name: str, call_id: str, cost: tuple) -> None:
    line = _calls(vendor, name)[call_id].line
    assert (line.get("cost_usd"), line.get("vendor_cost"), line.get("vendor_cost_unit")) == cost


def test_credits_never_become_dollars(tmp_path: Path) -> None:
    conversations = _fixture("elevenlabs-conversations.json")
    for c in conversations:
        c["metadata"].pop("cost_fiat", None)
    calls = read_export("elevenlabs", _json(tmp_path, conversations))
    assert [c.line.get("cost_usd") for c in calls] == [None] * len(conversations)
    assert [c.line["vendor_cost_unit"] for c in calls] == ["credits"] * len(conversations)


@pytest.mark.parametrize(("given", "field"), [({"vendor_cost": 713}, "vendor_cost"),
                                              ({"vendor_cost_unit": "credits"}, "vendor_cost_unit")])
def test_a_cost_without_its_unit_is_refused(given: dict[str, Any], field: str) -> None:
    line = {"call_id": "c1", "case": "no-heat-elderly-caller", **given}
    assert [f for f, _ in check_line(line, CASES)] == [field]
    assert check_line({**line, "vendor_cost": 713, "vendor_cost_unit": "credits"}, CASES) == []


# ------------------------------------------------------------------------------------ broken files

def _cut(text: str, after: str, keep: int) -> tuple[str, int, int]:
    """``text`` cut ``keep`` characters into the first ``after``; the line and column where it now ends."""
    end = text.index(after) + keep
    head = text[:end]
    return head, head.count("\n") + 1, end - head.rfind("\n")


def _where_it_breaks(vendor: str, path: Path) -> str:
    with pytest.raises(CallExportError) as info:
        read_export(vendor, path)
    assert info.value.file == str(path) and len(info.value.problems) == 1
    return info.value.problems[0]


@pytest.mark.parametrize(("vendor", "name", "cut_before"), [
    ("vapi", "vapi-calls.json", '"successEvaluation"'),
    ("elevenlabs", "elevenlabs-conversations.json", '"transcript_summary"'),
    ("hamming", "hamming-results.json", '"assertionResults"'),
])
def test_a_truncated_json_file_names_the_line_and_column_where_it_ends(vendor: str, name: str, cut_before: str,
                                                                       tmp_path: Path) -> None:
    head, line, column = _cut((FIXTURES / name).read_text(), cut_before, 0)
    path = tmp_path / "cut.json"
    path.write_text(head)
    said = _where_it_breaks(vendor, path)
    assert line > 5 and said.startswith(f"line {line}, column {column}: ")
    assert "the file looks cut short" in said and said.endswith(f"expected {FORMATS[vendor].holds}")


def test_a_string_cut_short_is_named_where_it_starts(tmp_path: Path) -> None:
    text = (FIXTURES / "vapi-call.json").read_text()
    head, line, column = _cut(text, '"Hello dear', 4)
    path = tmp_path / "cut.json"
    path.write_text(head)
    said = _where_it_breaks("vapi", path)
    assert said.startswith(f"line {line}, column {column - 4}: Unterminated string") and "cut short" in said


@pytest.mark.parametrize(("broken", "line", "why"), [
    (-1, 4, "the file looks cut short"),  # the last line cut in half
    (1, 2, "the line ends before its value does"),  # a line in the middle
])
def test_a_broken_json_lines_file_names_its_line(broken: int, line: int, why: str, tmp_path: Path) -> None:
    lines = [json.dumps(c) for c in _fixture("elevenlabs-conversations.json")]
    lines[broken] = lines[broken][: len(lines[broken]) // 2]
    path = tmp_path / "cut.jsonl"
    path.write_text("\n".join(lines) + "\n")
    said = _where_it_breaks("elevenlabs", path)
    assert said.startswith(f"line {line}, column ") and why in said and "one per line (JSON Lines)" in said


@pytest.mark.parametrize(("text", "said"), [
    ("", "the file is empty"),
    ("calls:\n  - id: 1\n", "line 1, column 1: Expecting value"),
    ('[{"id": "a"}]\n<html>', "line 2, column 1: Expecting value"),
])
def test_what_is_not_json_is_named_where_it_breaks(text: str, said: str, tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(text)
    assert _where_it_breaks("vapi", path).startswith(said)

