"""Our judge: any OpenAI-compatible chat completions endpoint, asked about rubrics over evidence.

:class:`Judge` posts ``{base}/chat/completions`` through :class:`assay.adapters.http.VendorClient`,
so transient failures (429 with ``Retry-After``, 5xx, a dropped connection) are retried with backoff
there, and everything else arrives as one classified error. Each question becomes a
:class:`Judgement`:

- a verdict (``met`` True for pass, False for fail) with the judge's rationale; or
- ``met = None`` with the reason: the endpoint's own message for a vendor error (an HTTP error, or a
  200 whose body is an error object), or what was wrong with an answer that holds no verdict by the
  rule of :mod:`.prompt` (``unparsed``: not readable, a refusal in ``message.refusal``, empty content,
  an answer cut off by ``finish_reason: length`` or ``content_filter``). Never a verdict guessed from text.

**Response formats.** Each question asks for the best format the endpoint has not refused
(:data:`~.prompt.RESPONSE_FORMATS`: a strict JSON schema, then JSON mode, then plain text). A refusal is
a 400 or 422 whose message names the format (``response_format``, ``json_schema``, ``json_object``,
"json mode", "structured output"), as OpenAI ("'response_format' of type 'json_schema' is not
supported with this model"), LM Studio ("'response_format.type' must be 'json_schema' or 'text'") and
FastAPI-based servers (422 ``detail`` naming ``body.response_format``) word theirs; the question is then
asked again in the next format at once. A judge remembers what its endpoint refused, so its later
questions do not pay the refusal again (questions already in flight may each meet it once); a judging
pass opens one judge, so it pays at most once or twice per pass. Every answered judgement's reason ends
with the format it was asked in (``[response_format: json_schema]``, also in
:attr:`Judgement.response_format`): the evidence of how each verdict was reached.

Tokens come from the answer's ``usage``; cost from ``judge_usd_per_1k_tokens_in/out`` (None when a
price or the usage is unknown). :meth:`Judge.ask_many` asks with at most ``concurrency`` requests in
flight. When the endpoint, key or model is wrong (no connection, 401, 403, 404), every later question
would fail the same way: the judge stops sending and the questions not yet asked get that reason.
Reasons never carry the key.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.core.errors import ConfigError, MalformedResponseError, VendorError
from assay.core.redact import REDACTED, redact

from ..http import RetryPolicy, VendorClient, vendor_message
from .prompt import RESPONSE_FORMATS, answer_text, messages, parse_verdict, snippet

if TYPE_CHECKING:
    import httpx

    from assay.core.settings import Settings

FATAL_STATUSES = frozenset({None, 401, 403, 404})
"""Errors that say the endpoint, key or model is wrong (None: no connection after retries)."""
REFUSAL_STATUSES = frozenset({400, 422})
"""Statuses with which a server refuses a ``response_format`` it does not support (when the message names it)."""
_NAMES_FORMAT = re.compile(r"response_format|json_schema|json_object|json mode|structured output", re.IGNORECASE)
_MODES = tuple(RESPONSE_FORMATS)


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
    response_format: str | None = None
    """How the answered request asked (``json_schema``, ``json_object`` or ``text``); None when none was answered."""
    unparsed: bool = False
    """True when the endpoint answered but the answer held no verdict (rather than the endpoint failing)."""

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
        self._format = _MODES[0]
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

    @property
    def response_format(self) -> str:
        """The format the next question is asked in: the best the endpoint has not refused."""
        with self._lock:
            return self._format

    def ask(self, rubric: str, evidence: str) -> Judgement:
        """Ask the judge whether ``rubric`` holds over ``evidence`` (rendered evidence text)."""
        with self._lock:
            broken = self._broken
        if broken is not None:
            return Judgement(None, f"not sent: an earlier request to the judge failed: {broken}")
        mode = self.response_format
        while True:
            body: dict[str, Any] = {"model": self.model, "messages": messages(rubric, evidence), "temperature": 0}
            if RESPONSE_FORMATS[mode] is not None:
                body["response_format"] = RESPONSE_FORMATS[mode]
            try:
                answer = self.client.post("/chat/completions", body)
                break
            except VendorError as exc:
                if _refuses_format(exc) and mode != _MODES[-1]:
                    mode = self._refused(mode)
                    continue
                reason = self._scrub(str(exc))
                if exc.status in FATAL_STATUSES and not isinstance(exc, MalformedResponseError):
                    with self._lock:
                        self._broken = self._broken or reason
                return Judgement(None, f"no verdict: {reason} [response_format: {mode}]", response_format=mode)
        tokens_in, tokens_out = _usage(answer)
        spent = (tokens_in, tokens_out, self._cost(tokens_in, tokens_out))
        try:
            verdict = parse_verdict(_content(answer))
        except VendorError as exc:
            unparsed = not isinstance(exc, _ServerFailure)
            return Judgement(None, f"no verdict: {self._scrub(str(exc))} [response_format: {mode}]", *spent,
                             response_format=mode, unparsed=unparsed)
        return Judgement(verdict.met, f"{verdict.rationale} [response_format: {mode}]", *spent, response_format=mode)

    def _refused(self, mode: str) -> str:
        """The format after ``mode``, remembered for the next questions unless a later one already is."""
        following = _MODES[_MODES.index(mode) + 1]
        with self._lock:
            if _MODES.index(self._format) < _MODES.index(following):
                self._format = following
        return following

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


class _ServerFailure(MalformedResponseError):
    """A 200 that is no completion: an error object, or a body of another shape. The endpoint failed."""


def _refuses_format(exc: VendorError) -> bool:
    """Whether ``exc`` is a server refusing the ``response_format`` it was sent (see the module docstring)."""
    return (exc.status in REFUSAL_STATUSES and not isinstance(exc, MalformedResponseError)
            and bool(_NAMES_FORMAT.search(exc.vendor_message)))


def _content(answer: Any) -> Any:
    """The assistant message's content of a chat completion, or :class:`MalformedResponseError` saying why
    there is none to read (``reasoning_content``/``reasoning`` beside it are never read for the verdict)."""
    if isinstance(answer, dict) and "error" in answer and not answer.get("choices"):
        raise _ServerFailure("judge", 200, f"the endpoint answered an error: {vendor_message(answer, 'no message')}")
    try:
        choice = answer["choices"][0]
        message = choice["message"]
        content = message.get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise _ServerFailure("judge", 200, "the answer is not a chat completion (no choices[0].message)") from None
    text = answer_text(content)
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip():
        raise MalformedResponseError("judge", 200, f"the judge refused to answer: {snippet(refusal)}")
    finish = choice.get("finish_reason")
    if finish in ("length", "content_filter"):
        cut = f" ({snippet(text)})" if text and text.strip() else ""
        why = "its token limit" if finish == "length" else "the endpoint's content filter"
        raise MalformedResponseError("judge", 200, f"the judge's answer was cut off by {why} "
                                                   f"(finish_reason: {finish}){cut}")
    if text is None or not text.strip():
        thought = next((message[k] for k in ("reasoning_content", "reasoning")
                        if isinstance(message.get(k), str) and message[k].strip()), None)
        beside = f"; only its reasoning had text, which is not read for a verdict ({snippet(thought)})" if thought else ""
        raise MalformedResponseError("judge", 200, f"the judge's answer has empty content{beside}")
    return content


def _usage(answer: Any) -> tuple[int | None, int | None]:
    usage = answer.get("usage") if isinstance(answer, dict) else None
    if not isinstance(usage, dict):
        return None, None
    tokens_in, tokens_out = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(tokens_in, int) or not isinstance(tokens_out, int):
        return None, None
    return tokens_in, tokens_out


__all__ = ["FATAL_STATUSES", "Judge", "Judgement"]
