"""The judging mechanisms' evaluators, one module per family, each function registered once.

:func:`registered` gives every mechanism (name -> :class:`Mechanism`: ``.name``, ``.params``,
``.evaluate``, ``.version``, ``.family``); :func:`evaluator_versions` their evaluator versions. A new
mechanism is its parameter model declared in :mod:`assay.core.mechanisms` and one function decorated
with :func:`mechanism` in its family's module here (see :mod:`.registry`).
"""

from . import exam, rubric, structural, timing, tool, transcript, vendor  # noqa: F401  (importing them registers the built-ins)
from .registry import Evaluator, Mechanism, evaluator_versions, mechanism, registered

__all__ = ["Evaluator", "Mechanism", "evaluator_versions", "mechanism", "registered"]
