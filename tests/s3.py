"""An S3 stand-in for the tests: a real moto server process on loopback, and a fresh bucket per test.

Registered as a pytest plug-in by ``tests/conftest.py`` (``pytest_plugins = ["s3"]``); import the
types with ``from s3 import S3Lake, MotoServer``. Fixtures:

- ``moto_server`` (session): ``python -m moto.server`` on 127.0.0.1 and a free port, stopped at
  the end (terminate, then kill);
- ``s3_lake`` (function): a new bucket and its lake URL ``s3://<bucket>/lake``, with the standard
  AWS environment pointed at the server (dummy credentials, a region, ``AWS_ENDPOINT_URL``), so
  s3fs, Polars (``pl.scan_parquet``) and DuckDB (``con.register_filesystem(fs)``) reach it with no
  vendor-specific settings; ``S3Lake.storage_options`` says the same explicitly, for code that
  must not rely on the environment.

Nothing reaches AWS: the server process gets dummy credentials too, and every client's endpoint
is the loopback one. ``MotoServer.record`` lists the requests the server answered (moto's request
recorder), with their byte ranges, so a test can prove a reader fetched only part of a file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import s3fs

__all__ = ["MotoServer", "Request", "S3Lake", "fresh_lake", "moto_server", "run_moto_server", "s3_lake"]

REGION = "us-east-1"
_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
_LISTENING = re.compile(r"Running on http://127\.0\.0\.1:(\d+)")
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


@dataclass(frozen=True)
class Request:
    """One request the server answered while recording."""

    method: str
    key: str
    """``<bucket>/<key>``, unquoted (the query string dropped)."""
    range: str | None
    """The ``Range`` header (``bytes=a-b``, ``bytes=-n``, ``bytes=a-``), ``None`` for the whole object."""

    def bytes_of(self, size: int) -> int:
        """How many bytes a GET of this request returns from an object of ``size`` bytes."""
        if self.range is None:
            return size
        match = _RANGE.fullmatch(self.range)
        assert match, f"unexpected Range header {self.range!r}"
        first, last = match.groups()
        if not first:
            return min(int(last), size)
        return min(int(last) if last else size - 1, size - 1) - int(first) + 1


@dataclass(frozen=True)
class MotoServer:
    """A running moto server: its endpoint and the environment that points AWS clients at it."""

    endpoint: str

    @property
    def env(self) -> dict[str, str]:
        """The standard AWS variables s3fs (botocore) and Polars (object_store) both read."""
        return {
            **_CREDENTIALS,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ALLOW_HTTP": "true",
        }

    @property
    def storage_options(self) -> dict[str, Any]:
        """The same settings as explicit s3fs (fsspec) options."""
        return {
            "key": _CREDENTIALS["AWS_ACCESS_KEY_ID"],
            "secret": _CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            "endpoint_url": self.endpoint,
            "client_kwargs": {"region_name": REGION},
        }

    def filesystem(self, **options: Any) -> "s3fs.S3FileSystem":
        """A fresh s3fs instance on this server (explicit options, so the environment is not needed)."""
        import s3fs

        return s3fs.S3FileSystem(**self.storage_options, skip_instance_cache=True, **options)

    @contextmanager
    def record(self) -> Iterator[list[Request]]:
        """The object requests (GET/HEAD/PUT) answered inside the block, listed when it ends."""
        requests: list[Request] = []
        self._recorder("reset-recording")
        self._recorder("start-recording")
        try:
            yield requests
        finally:
            self._recorder("stop-recording")
            for line in self._recorder("download-recording").splitlines():
                entry = json.loads(line)
                url = urllib.parse.urlsplit(entry["url"])
                key = urllib.parse.unquote(url.path.lstrip("/"))
                requests.append(Request(entry["method"], key, entry["headers"].get("Range")))

    def _recorder(self, action: str) -> str:
        data = None if action == "download-recording" else b""
        request = urllib.request.Request(f"{self.endpoint}/moto-api/recorder/{action}", data=data)
        with _loopback().open(request, timeout=10) as response:
            return response.read().decode()


@dataclass(frozen=True)
class S3Lake:
    """A fresh bucket on the moto server and the lake URL inside it."""

    server: MotoServer
    bucket: str
    url: str
    """``s3://<bucket>/lake``."""
    fs: "s3fs.S3FileSystem" = field(repr=False)
    """An s3fs instance with explicit options (usable with or without the environment)."""

    @property
    def env(self) -> dict[str, str]:
        """The AWS environment that reaches this lake (already set while ``s3_lake`` is in use)."""
        return self.server.env

    @property
    def storage_options(self) -> dict[str, Any]:
        """Explicit s3fs options that reach this lake."""
        return self.server.storage_options


def _loopback() -> urllib.request.OpenerDirector:
    """An opener that ignores any proxy in the environment (the server is on loopback)."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


@contextmanager
def run_moto_server(workdir: Path, *, timeout: float = 30.0) -> Iterator[MotoServer]:
    """Run ``python -m moto.server`` on 127.0.0.1 (port chosen by the OS) until the block ends."""
    log = workdir / "moto.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(_CREDENTIALS, AWS_DEFAULT_REGION=REGION, MOTO_RECORDER_FILEPATH=str(workdir / "recording.jsonl"))
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir,
        )
    try:
        yield MotoServer(_wait_until_serving(proc, log, timeout))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_until_serving(proc: subprocess.Popen[bytes], log: Path, timeout: float) -> str:
    """The server's endpoint, once it answers HTTP; an error with its log if it dies or hangs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto server exited with {proc.returncode}:\n{log.read_text()}")
        port = _LISTENING.search(log.read_text())
        if port:
            endpoint = f"http://127.0.0.1:{port.group(1)}"
            try:
                with _loopback().open(f"{endpoint}/moto-api/data.json", timeout=1):
                    return endpoint
            except OSError:
                pass
        time.sleep(0.05)
    raise RuntimeError(f"moto server not answering after {timeout}s:\n{log.read_text()}")


def fresh_lake(server: MotoServer) -> S3Lake:
    """Create a new, empty bucket and return the lake inside it."""
    bucket = f"assay-{uuid.uuid4().hex[:16]}"
    fs = server.filesystem()
    fs.call_s3("create_bucket", Bucket=bucket)  # fs.mkdir would send us-east-1 as a location constraint, refused
    return S3Lake(server=server, bucket=bucket, url=f"s3://{bucket}/lake", fs=fs)


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """One moto server process for the whole session."""
    with run_moto_server(tmp_path_factory.mktemp("moto")) as server:
        yield server


@pytest.fixture
def s3_lake(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Lake]:
    """A lake in a new bucket, with the AWS environment pointed at the moto server for this test."""
    import s3fs

    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)  # no profile, token or real endpoint leaks in
    for key, value in moto_server.env.items():
        monkeypatch.setenv(key, value)
    s3fs.S3FileSystem.clear_instance_cache()  # an instance made under another environment is stale here
    yield fresh_lake(moto_server)
    s3fs.S3FileSystem.clear_instance_cache()  # and one made here is stale afterwards
