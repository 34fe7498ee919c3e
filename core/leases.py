"""Keeping leases alive while we wait: :class:`LeaseKeeper` renews, from a thread of its own, the lease of
every run a worker holds, every quarter of the lease's length.

A runner renews its lease between steps (its heartbeat), but one vendor request may outlast a lease:
a simulated conversation the vendor answers after two minutes, a poll that waits out a rate limit. The
work the vendor did then is ours to store, so nothing may take the run away meanwhile. A lease the
keeper cannot renew (the run's deadline passed, another owner took it) is dropped from its care and the
failure kept: the worker meets it when it next uses the lease (:meth:`LeaseKeeper.lease`).

The keeper is held for the whole of a drive, so it also covers the work between two reports: a runner
preparing a large first batch (parsing a call set, assembling rows) and the ledger staging its files. A
renewal that fails for any other reason (the catalog briefly unreachable or locked) is logged and tried
again at the next tick: the lease is lost only when the catalog says so, never because one renewal met a
passing fault, and a keeper thread that died would leave the lease to lapse behind the worker's back.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from .errors import LeaseError
from .runner import Lease

log = logging.getLogger(__name__)


class LeaseKeeper:
    """Renews every held lease each ``ttl / 4`` seconds until the block ends (``with LeaseKeeper(...)``)."""

    def __init__(self, ledger: Any, ttl: float):
        self.ledger, self.ttl = ledger, ttl
        self.renewals = 0
        self._held: dict[str, Lease] = {}
        self._lost: dict[str, LeaseError] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="assay-lease-keeper", daemon=True)

    def __enter__(self) -> "LeaseKeeper":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def hold(self, lease: Lease) -> None:
        """Keep ``lease`` renewed from now on."""
        with self._lock:
            self._held[lease.run_id] = lease
            self._lost.pop(lease.run_id, None)

    def drop(self, run_id: str) -> None:
        """Stop renewing the run's lease (handed back or released)."""
        with self._lock:
            self._held.pop(run_id, None)

    def lease(self, run_id: str) -> Lease:
        """The run's lease as last renewed; raises the :class:`LeaseError` that lost it, if one did."""
        with self._lock:
            if run_id in self._lost:
                raise self._lost[run_id]
            return self._held[run_id]

    def renew(self, run_id: str) -> Lease:
        """Renew the run's lease now (a worker's heartbeat); raises :class:`LeaseError` if it is lost."""
        lease = self.lease(run_id)
        try:
            renewed = self.ledger.renew(lease, self.ttl)
        except LeaseError as exc:
            self._lose(lease, exc)
            raise
        self._renewed(lease, renewed)
        return renewed

    def _lose(self, lease: Lease, exc: LeaseError) -> bool:
        """Forget a lease that could not be renewed; whether it was still held (not merely dropped meanwhile)."""
        with self._lock:
            held = self._held.pop(lease.run_id, None) is not None
            if held:
                self._lost[lease.run_id] = exc
        return held

    def _renewed(self, lease: Lease, renewed: Lease) -> None:
        with self._lock:
            if lease.run_id in self._held:
                self._held[lease.run_id] = renewed
                self.renewals += 1

    def _loop(self) -> None:
        while not self._stop.wait(self.ttl / 4):
            with self._lock:
                held = list(self._held.values())
            for lease in held:
                try:
                    renewed = self.ledger.renew(lease, self.ttl)
                except LeaseError as exc:  # the worker finds out when it next uses the lease
                    if self._lose(lease, exc):
                        log.warning("run %s: could not renew the lease while waiting: %s", lease.run_id, exc)
                    continue
                except Exception as exc:  # a passing fault (the catalog unreachable, locked): the next tick retries
                    log.warning("run %s: renewing the lease failed, trying again in %.1f s: %s: %s",
                                lease.run_id, self.ttl / 4, type(exc).__name__, exc)
                    continue
                self._renewed(lease, renewed)


__all__ = ["LeaseKeeper"]
