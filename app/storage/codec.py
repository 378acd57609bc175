"""The one row codec: rating vectors and id lists as raw little-endian bytes.

Vectors are stored as float64 bytes, not as text or JSON numbers, so that
they round-trip bit for bit: the event log replays to exactly the stored
ratings (``/audit`` compares with ``==``).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from app.core.errors import LadderChanged

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
