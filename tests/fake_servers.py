"""Fake vendor servers for tests: one context-manager helper per fake, and the ``ASSAY_*`` settings that
point Assay at them. Fixtures (in a ``conftest.py``) wrap these; other test folders may use them directly.

``with fake_vapi() as vapi:`` starts :class:`assay.fakes.vapi.FakeVapi` on a free loopback port and stops
it afterwards; ``vapi_env(vapi)`` is the environment a runner reads its settings from.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from assay.fakes.openai import FakeOpenAI
from assay.fakes.vapi import FakeVapi

VAPI_KEY = "vapi-test-key-0123456789"
"""The fake VAPI's key in tests (long enough to be recognised if it ever leaked into a message)."""


@contextmanager
def fake_vapi(key: str = VAPI_KEY, **faults: Any) -> Iterator[FakeVapi]:
    """A running fake VAPI; keyword arguments set its faults (``latency=0.05``, ``scripts={...}``)."""
    with FakeVapi(key=key) as vapi:
        for name, value in faults.items():
            setattr(vapi.faults, name, value)
        yield vapi


def vapi_env(vapi: FakeVapi, key: str | None = None) -> dict[str, str]:
    """``ASSAY_VAPI_BASE_URL`` and ``ASSAY_VAPI_API_KEY`` for a running fake (its own key by default)."""
    return {"ASSAY_VAPI_BASE_URL": vapi.url, "ASSAY_VAPI_API_KEY": key if key is not None else vapi.key}


OPENAI_KEY = "sk-judge-test-key-0123456789"
"""The fake OpenAI-compatible server's key in tests."""


@contextmanager
def fake_openai(key: str = OPENAI_KEY, **faults: Any) -> Iterator[FakeOpenAI]:
    """A running fake OpenAI-compatible chat server; keyword arguments set its faults."""
    with FakeOpenAI(key=key) as server:
        for name, value in faults.items():
            setattr(server.faults, name, value)
        yield server


def judge_env(server: FakeOpenAI, model: str = "judge-model", key: str | None = None) -> dict[str, str]:
    """``ASSAY_JUDGE_BASE_URL`` (with ``/v1``), ``ASSAY_JUDGE_MODEL`` and ``ASSAY_JUDGE_API_KEY`` for a running fake."""
    return {"ASSAY_JUDGE_BASE_URL": server.url + "/v1", "ASSAY_JUDGE_MODEL": model,
            "ASSAY_JUDGE_API_KEY": key if key is not None else server.key}


HAMMING_KEY = "hamming-test-key-0123456789"
"""The fake Hamming's key in tests."""


@contextmanager
def fake_hamming(key: str = HAMMING_KEY, assertions: dict[str, str] | None = None, **faults: Any) -> Iterator[Any]:
    """A running fake Hamming (catalogue ``assertions``: id -> name); keyword arguments set its faults."""
    from assay.fakes.hamming import FakeHamming

    with FakeHamming(key=key, assertions=assertions) as hamming:
        for name, value in faults.items():
            setattr(hamming.faults, name, value)
        yield hamming


def hamming_env(hamming: Any, key: str | None = None) -> dict[str, str]:
    """The ``ASSAY_HAMMING_*`` settings for a running fake: its URL, key, agent, a number, its template test case."""
    return {"ASSAY_HAMMING_BASE_URL": hamming.url, "ASSAY_HAMMING_API_KEY": key if key is not None else hamming.key,
            "ASSAY_HAMMING_AGENT_ID": hamming.agent_id, "ASSAY_HAMMING_PHONE_NUMBERS": '["+15555550100"]',
            "ASSAY_HAMMING_TEST_CASE_ID": hamming.test_case_id}


ELEVENLABS_KEY = "xi-test-key-0123456789abcdef"
"""The fake ElevenLabs' key in tests."""


@contextmanager
def fake_elevenlabs(key: str = ELEVENLABS_KEY, **faults: Any) -> Iterator[Any]:
    """A running fake ElevenLabs; keyword arguments set its faults (``scripts={"criteria": {...}}``)."""
    from assay.fakes.elevenlabs import FakeElevenLabs

    with FakeElevenLabs(key=key) as elevenlabs:
        for name, value in faults.items():
            setattr(elevenlabs.faults, name, value)
        yield elevenlabs


def elevenlabs_env(elevenlabs: Any, key: str | None = None) -> dict[str, str]:
    """``ASSAY_ELEVENLABS_BASE_URL`` and ``ASSAY_ELEVENLABS_API_KEY`` for a running fake (its own key by default)."""
    return {"ASSAY_ELEVENLABS_BASE_URL": elevenlabs.url,
            "ASSAY_ELEVENLABS_API_KEY": key if key is not None else elevenlabs.key}


__all__ = ["ELEVENLABS_KEY", "HAMMING_KEY", "OPENAI_KEY", "VAPI_KEY", "elevenlabs_env", "fake_elevenlabs",
           "fake_hamming", "fake_openai", "fake_vapi", "hamming_env", "judge_env", "vapi_env"]
