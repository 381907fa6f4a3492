"""Storage: the durable record of a campaign's trials (the store interface and its schema).

:mod:`~dsbo.storage.base` holds the interface and the SQL both backends share
(:class:`~dsbo.storage.base.Store`, :class:`~dsbo.storage.base.Trial`, the statuses and the
schema version); :mod:`~dsbo.storage.sqlite` is the default backend (one file per run
directory) and :mod:`~dsbo.storage.postgres` the one several workers share. :func:`open_store`
picks the backend from its target. Backends import the base, never each other, and the base
imports neither; storage imports nothing of dsbo but :mod:`dsbo.errors` (no torch either, so
that reading a store is fast).
"""

from __future__ import annotations

from pathlib import Path

from dsbo.storage.base import (
    BUDGETED,
    COSTED,
    IMPORTED,
    SCHEMA_VERSION,
    STATUSES,
    Store,
    Trial,
    new_worker_id,
)
from dsbo.storage.sqlite import SQLiteStore, TrialStore

POSTGRES_SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://")


def is_store_url(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL store (a ``postgresql://`` URL)."""
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


def open_store(target: Store | str | Path | None, lock: bool = True) -> Store:
    """The store ``target`` names: a store (returned as is), a ``postgresql://`` URL
    (:class:`~dsbo.storage.postgres.PostgresStore`), a SQLite file path, or ``None`` (an
    in-memory SQLite store).

    Raises:
        StoreConnectionError: for a database that cannot be reached or refuses the login.
        StoreError: for a file that is not a usable store.
    """
    if isinstance(target, Store):
        return target
    if is_store_url(target):
        from dsbo.storage.postgres import PostgresStore

        return PostgresStore(str(target))
    return TrialStore(target or ":memory:", lock=lock)


__all__ = [
    "BUDGETED",
    "IMPORTED",
    "COSTED",
    "POSTGRES_SCHEMES",
    "SCHEMA_VERSION",
    "STATUSES",
    "SQLiteStore",
    "Store",
    "Trial",
    "TrialStore",
    "is_store_url",
    "new_worker_id",
    "open_store",
]
