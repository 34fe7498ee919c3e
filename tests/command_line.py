"""``assay`` as the tests type it: in this process (the default), or as a real process where that is the point.

:func:`assay` calls the program's :func:`~assay.flows.cli.main` with the arguments, in an environment and a
working folder of the call's own (both restored after), its standard output and error captured as bytes
and text alike. Its flows report to this worker's one Prefect server (:func:`prefect_api.harness`). It
answers what ``subprocess.run`` would (``returncode``, ``stdout``, ``stderr``), so a test reads the same
either way, and costs a fraction of a process: no interpreter, no imports, no Prefect client to start.

:func:`assay_process` runs ``python -m assay.flows.cli`` as a process, reporting to the tests' shared
Prefect server: for what only a process shows (the real entry point's exit, what a fresh interpreter
imports, signals, servers and workers that outlive the command). A test may call it only through the
``assay_process`` fixture, which puts it in the end-to-end tier (``tests/tiers.py``); called otherwise it
fails, naming the fixture.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from prefect_api import harness, prefect_env
from tiers import current_item, is_e2e

BASE_ENV = {"NO_COLOR": "1"}


@dataclass
class Done:
    """What a finished command left: the same three fields as :class:`subprocess.CompletedProcess`."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def _environment(home: Path | None, columns: int, extra: Mapping[str, str] | None) -> dict[str, str]:
    """The command's environment: this one without ``ASSAY_*`` and ``PREFECT_*`` settings, then the home,
    the width and ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "PREFECT_"))}
    env |= BASE_ENV | {"COLUMNS": str(columns)}
    if home is not None:
        home.mkdir(parents=True, exist_ok=True)  # only `assay init` and the demo create a workspace
        env |= {"ASSAY_HOME": str(home), "PREFECT_HOME": str(home / "prefect")}
    return env | dict(extra or {})


class _Capture(io.TextIOWrapper):
    """A standard stream held as bytes. Never closed: a log handler the command set up may keep it and write
    to it after the command (a process would have ended; here the write goes nowhere, quietly)."""

    def close(self) -> None:
        self.flush()


@contextlib.contextmanager
def _swapped(env: Mapping[str, str], cwd: Path | None) -> Iterator[tuple[_Capture, _Capture]]:
    """``os.environ``, the working folder and the standard streams as a command of its own would have them."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    out, err = (_Capture(io.BytesIO(), encoding="utf-8", write_through=True) for _ in range(2))
    os.environ.clear()
    os.environ.update(env)
    try:
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(""), out, err
        yield out, err
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def _text(stream: _Capture) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8", errors="replace")


def _checked(done, check: int | None):
    if check is not None:
        assert done.returncode == check, (f"assay {' '.join(done.args)}: exit {done.returncode}, expected {check}\n"
                                          f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}")
    return done


def assay(*args: str, home: Path | None = None, check: int | None = 0, columns: int = 200,
          extra_env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Done:
    """``assay ARGS`` in this process, in ``home``'s workspace, at ``columns`` columns; its exit status is
    checked to be ``check`` (None: not checked)."""
    from assay.flows.cli import main

    harness()
    argv = [str(a) for a in args]
    env = _environment(home, columns, extra_env)
    if env.get("ASSAY_FAILPOINTS"):
        pytest.fail("a failpoint kills the process it is reached in, here the test's own: run the command with "
                    "the failpoint_kill fixture", pytrace=False)
    with _swapped(env, cwd) as (out, err):
        try:
            main(argv)
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        done = Done(argv, code, _text(out), _text(err))
    return _checked(done, check)


def assay_process(*args: str, home: Path | None = None, check: int | None = 0, columns: int = 200,
                  extra_env: Mapping[str, str] | None = None, cwd: Path | None = None, shared_prefect: bool = True,
                  env: Mapping[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``assay ARGS`` as a process (``python -m assay.flows.cli``); its flows report to the tests' shared
    Prefect server unless ``shared_prefect`` is false (then: the workspace's own server if one runs, else a
    temporary one per command). ``env``, when given, is the whole environment instead (nothing added). Only
    for a test in the end-to-end tier (the ``assay_process`` fixture)."""
    item = current_item()
    if item is not None and not is_e2e(item):
        pytest.fail(f"{item.nodeid} runs assay as a process without the `assay_process` fixture: ask for the "
                    "fixture (the test then runs in the end-to-end tier), or call command_line.assay, in this "
                    "process", pytrace=False)
    if env is None:
        env = _environment(home, columns, extra_env) | (prefect_env() if shared_prefect else {})
    proc = subprocess.run([sys.executable, "-m", "assay.flows.cli", *map(str, args)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    return _checked(proc, check)


@pytest.fixture(name="assay_process", scope="session")
def assay_process_fixture():
    """:func:`assay_process`, for a test whose point is a real process (it runs in the end-to-end tier)."""
    return assay_process


def _python(code: str, *, env: Mapping[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def fresh_interpreter():
    """``python -c CODE`` in a fresh interpreter (what the program imports, how it ends): end-to-end."""
    return _python


@contextlib.contextmanager
def _fake_vendors(env_file: Path, *, seconds: int = 900, cwd: Path | None = None,
                  args: Sequence[str] = ()) -> Iterator[dict[str, str]]:
    """``assay fake-vendors --env-file ENV_FILE ARGS`` in the background, as the README starts it (``... &``): the
    variables the file exports once it is written; the process is ended when the block ends."""
    proc = subprocess.Popen([sys.executable, "-m", "assay.flows.cli", "fake-vendors", "--env-file", str(env_file),
                             "--seconds", str(seconds), *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not env_file.exists():
            assert proc.poll() is None, f"assay fake-vendors ended: {proc.communicate()}"
            assert time.monotonic() < deadline, "assay fake-vendors did not start within 60 s"
            time.sleep(0.1)
        exports = (line.removeprefix("export ").split("=", 1) for line in env_file.read_text().splitlines())
        yield {key: value.strip("'") for key, value in exports}
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.fixture(scope="session")
def fake_vendors_process():
    """The fake vendors served by ``assay fake-vendors`` as a background process (end-to-end)."""
    return _fake_vendors


def _killed_at(step: str, argv: list[str], *, env: Mapping[str, str] | None = None,
               cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``argv`` as a process told to die at the failpoint ``step`` (``ASSAY_FAILPOINTS``), checked to have
    died there (SIGKILL) rather than finished."""
    from assay.core.failpoints import ENV

    proc = subprocess.run(argv, env={**(env if env is not None else os.environ), ENV: step}, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == -signal.SIGKILL, (f"not killed at {step}: exit {proc.returncode}\n"
                                                f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


@pytest.fixture(scope="session")
def failpoint_kill():
    """Run a process that is killed at a named step (``assay.core.failpoints``), for a test that then
    recovers and counts: end-to-end. ``failpoint_kill(step, argv, env=...)``."""
    return _killed_at


def _kill(proc: subprocess.Popen) -> int:
    """SIGKILL to ``proc``'s whole process group (it was started with ``start_new_session=True``): no
    clean-up runs anywhere in it, as when a machine loses power. Its exit status."""
    os.killpg(proc.pid, signal.SIGKILL)
    return proc.wait(timeout=60)


@pytest.fixture(scope="session")
def process_kill():
    """Kill a process (and what it started) mid-work, for a test that then recovers and counts:
    end-to-end. ``process_kill(popen)``."""
    return _kill
