"""The building blocks every bundle model shares: identifiers, non-empty text, the strict base model."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from .ids import IDENTIFIER_RULE, is_identifier


def _identifier(value: str) -> str:
    if not is_identifier(value):
        slug = re.sub(r"[^a-z0-9_-]+", "-", value.lower()).strip("-_")[:64]
        hint = f" — e.g. {slug!r}" if is_identifier(slug) else ""
        raise ValueError(f"{value!r} is not a valid identifier ({IDENTIFIER_RULE}){hint}")
    _refuse_secret_key(value)
    return value


def _refuse_secret_key(value: str) -> None:
    """A key is stored, printed and joined on exactly as written, so a secret in one cannot be redacted
    like one in a title: it is refused. The message names the kind of secret, never the value."""
    from .redact import redact_spans

    _, fired = redact_spans(value)
    if fired:
        raise ValueError(f"this identifier looks like a credential ({fired[0]}); identifiers are stored and "
                         "shown as written and cannot be redacted, so name what it identifies instead "
                         "(e.g. 'booking-refund') and keep the credential out of the bundle")


Identifier = Annotated[str, AfterValidator(_identifier)]
Text = Annotated[str, Field(min_length=1)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


__all__ = ["Identifier", "Text"]
