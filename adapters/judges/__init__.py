"""Our judge: a model behind an OpenAI-compatible chat API, asked whether a rubric holds over evidence.

:class:`Judge` asks (bounded concurrency, retries through :mod:`assay.adapters.http`, the best response
format the server accepts: a strict JSON schema, JSON mode, or plain text); :mod:`.prompt` holds the
versioned prompt and the one documented rule that reads a verdict out of its answer.
"""

from .client import Judge, Judgement
from .prompt import PROMPT_VERSION

__all__ = ["PROMPT_VERSION", "Judge", "Judgement"]
