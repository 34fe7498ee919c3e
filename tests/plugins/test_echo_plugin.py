"""A runner from another distribution joins Assay by being installed, and the conformance kit tests it.

The ``assay-echo-runner`` package (next to this file) is built and installed into a temporary folder,
never into the shared environment; the kit then runs in a subprocess that sees that folder on
``PYTHONPATH``. Its tests run against the ``echo`` runner, and the gap ``echo`` declares is a strict
xfail with echo's own reason.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
PLUGIN = Path(__file__).parent / "assay-echo-runner"


def _echo_runner_class() -> type:
    """The plug-in's runner class, read from its source (it is not importable in this process)."""
    spec = importlib.util.spec_from_file_location("assay_echo_runner", PLUGIN / "assay_echo_runner.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EchoRunner


def _install(tmp_path: Path) -> Path:
    """Build and install the plug-in into ``tmp_path/site`` (from a copy: building writes next to the source)."""
    source, site = tmp_path / "src", tmp_path / "site"
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index",
         "--no-deps", "--no-build-isolation", "--target", str(site), str(source)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, (
        f"building the plug-in offline needs setuptools>=70.1 in this environment (the `test` extra):\n{done.stderr}"
    )
    return site


def test_an_installed_plugin_runner_is_run_by_the_conformance_kit(tmp_path: Path) -> None:
    site = _install(tmp_path)
    assert (site / "assay_echo_runner-0.1.0.dist-info" / "entry_points.txt").read_text().split() == [
        "[assay.runners]", "echo", "=", "assay_echo_runner:EchoRunner",
    ]
    report = tmp_path / "kit.xml"
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/conformance",
         "-k", "echo and not postgres", f"--junitxml={report}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr

    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        skipped = case.find("skipped")
        outcomes[case.get("name")] = (
            (skipped.get("type"), skipped.get("message")) if skipped is not None
            else "failed" if case.find("failure") is not None or case.find("error") is not None
            else "passed"
        )
    [(gap, reason)] = _echo_runner_class().known_gaps.items()
    assert outcomes == {
        "test_every_runner_loads_with_honest_declarations[echo]": "passed",
        "test_no_report_without_the_lease[sqlite-echo]": "passed",
        "test_renew_extends_and_release_ends[sqlite-echo]": "passed",
        "test_a_full_drive_stores_one_case_run_per_case[sqlite-echo]": "passed",
        f"{gap}[sqlite-echo]": ("pytest.xfail", reason),
        "test_a_late_report_is_dropped_and_recorded[sqlite-echo]": "passed",
        "test_declared_mechanisms_are_honest[sqlite-echo]": "passed",
        "test_a_runner_that_dies_mid_run_times_out[sqlite-echo]": "passed",
        "test_a_suite_runs_through_the_flows[sqlite-echo]": "passed",
        "test_a_suite_runs_through_the_flows_on_s3[sqlite-echo]": "passed",
    }
    assert f"echo: {gap} — {reason}" in done.stdout.splitlines()
