"""Start every fake vendor at once: for the demo, for ``assay fake-vendors``, and for tests.

:func:`start_all` returns running fakes keyed by vendor; :func:`settings_env` gives the ``ASSAY_*``
environment that points Assay at them (base URLs and the keys the fakes accept).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from .base import FakeVendor

FAKE_KEYS: Mapping[str, str] = {
    "vapi": "fake-vapi-key",
    "elevenlabs": "fake-elevenlabs-key",
    "hamming": "fake-hamming-key",
    "openai": "fake-openai-key",
}
"""The key each fake accepts unless told otherwise (never a real credential)."""

FAKE_MODEL = "fake-judge-1"
"""The model name the fake OpenAI-compatible server answers to in the demo."""


def _classes() -> dict[str, type[FakeVendor]]:
    from .elevenlabs import FakeElevenLabs
    from .hamming import FakeHamming
    from .openai import FakeOpenAI
    from .vapi import FakeVapi

    return {"vapi": FakeVapi, "elevenlabs": FakeElevenLabs, "hamming": FakeHamming, "openai": FakeOpenAI}


def start_all(host: str = "127.0.0.1", port_base: int = 0, keys: Mapping[str, str] = FAKE_KEYS) -> dict[str, FakeVendor]:
    """Start the four fakes; ports ``port_base`` .. ``port_base + 3`` (or free ports when 0)."""
    started: dict[str, FakeVendor] = {}
    try:
        for i, (vendor, cls) in enumerate(_classes().items()):
            started[vendor] = cls(key=keys[vendor], host=host, port=port_base + i if port_base else 0).start()
    except BaseException:
        stop_all(started)
        raise
    return started


def stop_all(fakes: Mapping[str, FakeVendor]) -> None:
    for fake in fakes.values():
        fake.stop()


@contextmanager
def running(**kwargs) -> Iterator[dict[str, FakeVendor]]:
    fakes = start_all(**kwargs)
    try:
        yield fakes
    finally:
        stop_all(fakes)


@contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` with ``env`` set, restored afterwards (spawned processes inherit it meanwhile)."""
    import os

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def settings_env(fakes: Mapping[str, FakeVendor], keys: Mapping[str, str] = FAKE_KEYS) -> dict[str, str]:
    """The ``ASSAY_*`` variables that point Assay's runners, judge and caller at these fakes."""
    env = {}
    if "vapi" in fakes:
        env |= {"ASSAY_VAPI_BASE_URL": fakes["vapi"].url, "ASSAY_VAPI_API_KEY": keys["vapi"]}
    if "elevenlabs" in fakes:
        env |= {"ASSAY_ELEVENLABS_BASE_URL": fakes["elevenlabs"].url, "ASSAY_ELEVENLABS_API_KEY": keys["elevenlabs"]}
    if "hamming" in fakes:
        env |= {"ASSAY_HAMMING_BASE_URL": fakes["hamming"].url, "ASSAY_HAMMING_API_KEY": keys["hamming"],
                "ASSAY_HAMMING_AGENT_ID": "fake-agent", "ASSAY_HAMMING_PHONE_NUMBERS": '["+15555550100"]',
                "ASSAY_HAMMING_TEST_CASE_ID": "tc-template"}
    if "openai" in fakes:
        env |= {"ASSAY_JUDGE_BASE_URL": fakes["openai"].url + "/v1", "ASSAY_JUDGE_MODEL": FAKE_MODEL,
                "ASSAY_JUDGE_API_KEY": keys["openai"]}
    return env


__all__ = ["FAKE_KEYS", "FAKE_MODEL", "environment", "running", "settings_env", "start_all", "stop_all"]
