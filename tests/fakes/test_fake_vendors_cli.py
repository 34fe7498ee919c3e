"""`assay fake-vendors` serves the four fakes by hand and says how to point Assay at them."""

from __future__ import annotations

from pathlib import Path

import httpx


def test_fake_vendors_serves_and_writes_the_environment(fake_vendors_process, tmp_path: Path) -> None:
    with fake_vendors_process(tmp_path / "fakes.env", seconds=60) as values:
        assert {"ASSAY_VAPI_BASE_URL", "ASSAY_ELEVENLABS_BASE_URL", "ASSAY_HAMMING_BASE_URL",
                "ASSAY_JUDGE_BASE_URL", "ASSAY_JUDGE_MODEL"} <= set(values)
        vapi = httpx.get(values["ASSAY_VAPI_BASE_URL"] + "/assistant",
                         headers={"authorization": f"Bearer {values['ASSAY_VAPI_API_KEY']}"}, timeout=10)
        assert vapi.status_code == 200 and vapi.json() == []
        judge = httpx.post(values["ASSAY_JUDGE_BASE_URL"] + "/chat/completions", timeout=10,
                           headers={"authorization": f"Bearer {values['ASSAY_JUDGE_API_KEY']}"},
                           json={"model": values["ASSAY_JUDGE_MODEL"], "messages": [{"role": "user", "content": "hi"}]})
        assert judge.status_code == 200 and judge.json()["choices"][0]["message"]["content"]
