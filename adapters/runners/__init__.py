"""The runners. Importing this package registers each of them by name.

- ``config_check``: reads a compiled assistant config and executes nothing (structural evidence).
- ``fixed``: returns fixed verdicts; proves the contract without touching any other runner.
- ``recorded``: replays a file of recorded calls (a call set) as case runs and vendor evaluations.

Heavy dependencies (DuckDB, PyArrow) are imported when a runner executes, not here.
"""

from .config_check import ConfigCheckRunner
from .fixed import FixedRunner
from .recorded import RecordedRunner

__all__ = ["ConfigCheckRunner", "FixedRunner", "RecordedRunner"]
