"""Vendors' call exports read as call-set lines: timings, tool calls paired with their results, the vendors'
own verdicts under the runners' evaluator names, and bad records named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.adapters.call_exports import read_export
from assay.core.callset import check_line
from assay.core.errors import CallExportError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "calls"
CASES = {"water-heater-outside-area", "no-heat-elderly-caller", "maintenance-plan-question", "angry-billing-dispute"}


def _calls(vendor: str, name: str) -> dict:
    return {c.line["call_id"]: c for c in read_export(vendor, FIXTURES / name)}


@pytest.mark.parametrize(("vendor", "name"), [("vapi", "vapi-calls.json"), ("hamming", "hamming-results.json"),
                                              ("elevenlabs", "elevenlabs-conversations.json")])
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
