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
    return value


Identifier = Annotated[str, AfterValidator(_identifier)]
Text = Annotated[str, Field(min_length=1)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


__all__ = ["Identifier", "Text"]
