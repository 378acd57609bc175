"""The one row codec: rating vectors and id lists as raw little-endian bytes, and times as whole microseconds.

Vectors are stored as float64 bytes, not as text or JSON numbers, so that
they round-trip bit for bit: the event log replays to exactly the stored
ratings (``/audit`` compares with ``==``).  Times read back become int64
microseconds since the epoch (:func:`micros`), exact and held in NumPy columns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import Dialect

from app.core.errors import LadderChanged
from app.storage.sql import result_converter
from app.storage.tables import Player

FLOAT = "<f8"
INT = "<i8"


def pack(vector: np.ndarray) -> bytes:
    """One vector as bytes."""
    return np.ascontiguousarray(vector, dtype=FLOAT).tobytes()


def unpack(blob: bytes) -> np.ndarray:
    """One vector from bytes (a writable copy)."""
    return np.frombuffer(blob, dtype=FLOAT).astype(np.float64)


def pack_rows(C: np.ndarray) -> list[bytes]:
    """Each row of a matrix as bytes."""
    raw = np.ascontiguousarray(C, dtype=FLOAT).tobytes()
    width = 8 * C.shape[1] if C.ndim == 2 and C.shape[1] else 0
    return [raw[lo : lo + width] for lo in range(0, len(raw), width)] if width else []


def unpack_rows(blobs: Iterable[bytes], dim: int) -> np.ndarray:
    """A matrix whose rows are the given vectors of ``dim`` numbers (a writable copy).  :class:`LadderChanged`
    if they have another length: the ladder's k changed since the caller read it."""
    blobs = list(blobs)
    raw = b"".join(blobs)
    if len(raw) != 8 * dim * len(blobs):
        raise LadderChanged("The ladder's k changed while this was read; retry it.")
    return np.frombuffer(raw, dtype=FLOAT).astype(np.float64).reshape(-1, dim)


def unpack_matrix(blob: bytes, dim: int) -> np.ndarray:
    """A matrix of rows of ``dim`` numbers stored one after the other in one blob (a checkpoint's, a refit's)."""
    return np.frombuffer(blob, dtype=FLOAT).astype(np.float64).reshape(-1, dim)


def pack_ids(ids: np.ndarray) -> bytes:
    return np.ascontiguousarray(ids, dtype=INT).tobytes()


def unpack_ids(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=INT).astype(np.int64)


def among(ids: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """Which of ``ids`` are in ``sorted_ids``: a binary search each (one player's check costs log n)."""
    if len(sorted_ids) == 0:
        return np.zeros(len(ids), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    return sorted_ids[at] == ids


#: Rows per NumPy conversion of a column read (a player table's, a column of times).
CHUNK_ROWS = 50_000
#: ``last_played`` of a player who has not played.
NO_TIME = np.iinfo(np.int64).min
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micros(moment: datetime | None) -> int:
    """A time as whole microseconds since the epoch (exact, unlike seconds in a float), NO_TIME for None."""
    if moment is None:
        return NO_TIME
    delta = moment.astimezone(UTC) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


MICROS_PER_DAY = 86_400_000_000


def day_years(us: np.ndarray) -> np.ndarray:
    """The UTC days of times of :func:`micros`, in years (of 365.25 days) since the epoch, as the online steps
    count time away (:mod:`app.rating.experience`): games of one day do not wear each other, and a replay gives
    the same steps whenever it runs (NaN for NO_TIME)."""
    us = np.asarray(us, dtype=np.int64)
    return np.where(us == NO_TIME, np.nan, (us // MICROS_PER_DAY) / 365.25)


def micros_column(values: list, stamp: Callable[[Any], datetime | None]) -> np.ndarray:
    """:func:`micros` of a column of the driver's times: SQLite's text (UTC digits) parsed by NumPy at once (far
    faster than one by one), other drivers' values one by one."""
    present = [v for v in values if v is not None]
    if present and isinstance(present[0], str):
        try:  # a chunk at a time, for the other threads (see :func:`app.storage.read_model.from_rows`)
            chunks = range(0, len(present), CHUNK_ROWS)
            parsed = np.concatenate(
                [np.array(present[lo : lo + CHUNK_ROWS], dtype="datetime64[us]").astype(np.int64) for lo in chunks]
            )
        except ValueError:  # not the digits SQLAlchemy writes: convert them one by one
            parsed = None
        if parsed is not None:
            out = np.full(len(values), NO_TIME, dtype=np.int64)
            out[np.array([v is not None for v in values], dtype=bool)] = parsed
            return out
    return np.array([micros(stamp(v)) for v in values], dtype=np.int64)


def moment(us: int) -> datetime | None:
    """The time of :func:`micros`."""
    return None if us == NO_TIME else _EPOCH + timedelta(microseconds=int(us))


def time_converter(dialect: Dialect) -> Callable[[Any], datetime | None]:
    """What the driver's times become, as the ORM would convert them."""
    return result_converter(Player.__table__.c.last_played_at, dialect)
