"""The base of every mechanism's parameter model (:data:`assay.core.mechanisms.MECHANISMS`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Params(BaseModel):
    """Base of every mechanism's parameters: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


__all__ = ["Params"]
