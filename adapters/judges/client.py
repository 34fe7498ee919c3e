"""Our judge: any OpenAI-compatible chat completions endpoint, asked about rubrics over evidence.

:class:`Judge` posts ``{base}/chat/completions`` through :class:`assay.adapters.http.VendorClient`,
so transient failures (429 with ``Retry-After``, 5xx, a dropped connection) are retried with backoff
there, and everything else arrives as one classified error. Each question becomes a
:class:`Judgement`:

- a verdict (``met`` True for pass, False for fail) with the judge's rationale; or
- ``met = None`` with the reason: the endpoint's own message for a vendor error, or what was wrong
  with an answer that was not the verdict the prompt asks for. Never a verdict guessed from text.

Tokens come from the answer's ``usage``; cost from ``judge_usd_per_1k_tokens_in/out`` (None when a
price or the usage is unknown). :meth:`Judge.ask_many` asks with at most ``concurrency`` requests in
flight. When the endpoint, key or model is wrong (no connection, 401, 403, 404), every later question
would fail the same way: the judge stops sending and the questions not yet asked get that reason.
Reasons never carry the key.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.core.errors import ConfigError, MalformedResponseError, VendorError
from assay.core.redact import REDACTED, redact

from ..http import RetryPolicy, VendorClient
from .prompt import RESPONSE_FORMAT, messages, parse_verdict

if TYPE_CHECKING:
    import httpx

    from assay.core.settings import Settings

FATAL_STATUSES = frozenset({None, 401, 403, 404})
"""Errors that say the endpoint, key or model is wrong (None: no connection after retries)."""


@dataclass(frozen=True)
class Judgement:
    """The judge's answer to one question: a verdict, or why there is none."""

    met: bool | None
    """True: the rubric holds (pass); False: it does not (fail); None: no verdict (see ``reason``)."""
    reason: str
    """The judge's rationale for a verdict; for no verdict, what went wrong."""
    tokens_in: int | None = None
    """Prompt tokens the endpoint reported (None when no answer or no usage came back)."""
    tokens_out: int | None = None
    """Completion tokens the endpoint reported."""
    cost_usd: float | None = None
    """``tokens_in``/``tokens_out`` priced by the settings; None when a price or the usage is unknown."""

    @property
    def value(self) -> float | None:
        """1.0 for pass, 0.0 for fail, None for no verdict."""
        return None if self.met is None else float(self.met)


class Judge:
    """A judge model behind an OpenAI-compatible endpoint (``base_url`` includes ``/v1``)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        concurrency: int = 8,
        usd_per_1k_in: float | None = None,
        usd_per_1k_out: float | None = None,
        retry: RetryPolicy = RetryPolicy(),
        sleep: Callable[[float], None] = time.sleep,
        timeout: float = 60.0,
        transport: "httpx.BaseTransport | None" = None,
    ):
        if concurrency < 1:
            raise ConfigError(f"judge concurrency {concurrency} is not at least 1; set ASSAY_JUDGE_CONCURRENCY >= 1")
        self.model = model
        self.concurrency = concurrency
        self.prices = (usd_per_1k_in, usd_per_1k_out)
        self._key = api_key
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = VendorClient("judge", base_url, headers, timeout=timeout, retry=retry, sleep=sleep,
                                   transport=transport)
        self._broken: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: "Settings", **kwargs: Any) -> "Judge":
        """The judge the settings configure (``ASSAY_JUDGE_*``); :class:`ConfigError` when there is none."""
        if not settings.judge_base_url or not settings.judge_model:
            raise ConfigError("no judge configured: set ASSAY_JUDGE_BASE_URL (with /v1) and ASSAY_JUDGE_MODEL")
        key = settings.judge_api_key.get_secret_value() if settings.judge_api_key else None
        return cls(settings.judge_base_url, settings.judge_model, key, concurrency=settings.judge_concurrency,
                   usd_per_1k_in=settings.judge_usd_per_1k_tokens_in,
                   usd_per_1k_out=settings.judge_usd_per_1k_tokens_out, **kwargs)

    def __enter__(self) -> "Judge":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()

    @property
    def sent(self) -> int:
        """Requests actually sent to the endpoint, retries included."""
        return self.client.sent

    def ask_many(
        self, questions: Sequence[tuple[str, str]], on_answer: Callable[[], None] | None = None
    ) -> list[Judgement]:
        """A judgement per ``(rubric, evidence)`` question, in order, with at most ``concurrency`` in flight;
        ``on_answer()`` is called as each one arrives (from the thread that asked it)."""
        if not questions:
            return []

        def one(question: tuple[str, str]) -> Judgement:
            judgement = self.ask(*question)
            if on_answer is not None:
                on_answer()
            return judgement

        workers = min(self.concurrency, len(questions))
        if workers == 1:
            return [one(q) for q in questions]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
            return list(pool.map(one, questions))

    def ask(self, rubric: str, evidence: str) -> Judgement:
        """Ask the judge whether ``rubric`` holds over ``evidence`` (rendered evidence text)."""
        with self._lock:
            broken = self._broken
        if broken is not None:
            return Judgement(None, f"not sent: an earlier request to the judge failed: {broken}")
        body = {"model": self.model, "messages": messages(rubric, evidence), "temperature": 0,
                "response_format": RESPONSE_FORMAT}
        try:
            answer = self.client.post("/chat/completions", body)
        except VendorError as exc:
            reason = self._scrub(str(exc))
            if exc.status in FATAL_STATUSES and not isinstance(exc, MalformedResponseError):
                with self._lock:
                    self._broken = self._broken or reason
            return Judgement(None, f"no verdict: {reason}")
        tokens_in, tokens_out = _usage(answer)
        cost = self._cost(tokens_in, tokens_out)
        try:
            verdict = parse_verdict(_content(answer))
        except MalformedResponseError as exc:
            return Judgement(None, f"no verdict: {self._scrub(str(exc))}", tokens_in, tokens_out, cost)
        return Judgement(verdict.met, verdict.rationale, tokens_in, tokens_out, cost)

    def _cost(self, tokens_in: int | None, tokens_out: int | None) -> float | None:
        price_in, price_out = self.prices
        if None in (tokens_in, tokens_out, price_in, price_out):
            return None
        return tokens_in / 1000 * price_in + tokens_out / 1000 * price_out  # type: ignore[operator]

    def _scrub(self, text: str) -> str:
        """``text`` without the key (an endpoint may echo it) or any bearer token."""
        if self._key:
            text = text.replace(self._key, REDACTED)
        return redact(text)


def _content(answer: Any) -> Any:
    """The assistant message's content of a chat completion, or None when the answer has another shape."""
    try:
        return answer["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None


def _usage(answer: Any) -> tuple[int | None, int | None]:
    usage = answer.get("usage") if isinstance(answer, dict) else None
    if not isinstance(usage, dict):
        return None, None
    tokens_in, tokens_out = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(tokens_in, int) or not isinstance(tokens_out, int):
        return None, None
    return tokens_in, tokens_out


__all__ = ["FATAL_STATUSES", "Judge", "Judgement"]
