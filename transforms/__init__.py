"""Polars transforms: deterministic judging over many outcomes at once, the carry-forward policy, verdicts.

Imports ``assay.core`` only; never ``assay.adapters`` or ``assay.storage``. Importing this package is
light: each submodule imports Polars when it is itself imported.

- :mod:`.judge`: the engine, :func:`~.judge.evaluate`, which knows no mechanism by name;
- :mod:`.mechanisms`: one module per mechanism family, each evaluator registered once;
- :mod:`.carry`: which pairs a judging pass evaluates, carries or leaves out;
- :mod:`.verdicts`: criteria applied to stored atoms (the re-score tier), with :mod:`.verdict_rules` (the rules
  as expressions) and :mod:`.rescore` (the same verdicts from per-(run, key) counts);
- :mod:`.stats`: the statistics of pass rates from few repeats, pure Python; :mod:`.series`: a case's decision
  over its replays under a per-case pass rate.
"""

__all__: list[str] = []
