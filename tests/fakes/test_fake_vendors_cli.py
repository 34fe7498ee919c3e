"""`assay fake-vendors` serves the four fakes by hand and says how to point Assay at them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx


def test_fake_vendors_serves_and_writes_the_environment(tmp_path: Path) -> None:
    env_file = tmp_path / "fakes.env"
    proc = subprocess.Popen([sys.executable, "-m", "assay.flows.cli", "fake-vendors", "--env-file", str(env_file),
                             "--seconds", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not env_file.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the fakes did not start within 60 s"
            time.sleep(0.1)
        exports = dict(line.removeprefix("export ").split("=", 1) for line in env_file.read_text().splitlines())
        values = {k: v.strip("'") for k, v in exports.items()}
        assert {"ASSAY_VAPI_BASE_URL", "ASSAY_ELEVENLABS_BASE_URL", "ASSAY_HAMMING_BASE_URL",
                "ASSAY_JUDGE_BASE_URL", "ASSAY_JUDGE_MODEL"} <= set(values)
        vapi = httpx.get(values["ASSAY_VAPI_BASE_URL"] + "/assistant",
                         headers={"authorization": f"Bearer {values['ASSAY_VAPI_API_KEY']}"}, timeout=10)
        assert vapi.status_code == 200 and vapi.json() == []
        judge = httpx.post(values["ASSAY_JUDGE_BASE_URL"] + "/chat/completions", timeout=10,
                           headers={"authorization": f"Bearer {values['ASSAY_JUDGE_API_KEY']}"},
                           json={"model": values["ASSAY_JUDGE_MODEL"], "messages": [{"role": "user", "content": "hi"}]})
        assert judge.status_code == 200 and judge.json()["choices"][0]["message"]["content"]
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
