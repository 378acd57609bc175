"""Per-process read caches, one set per database engine (a process may talk to several databases)."""

from __future__ import annotations

import threading
import weakref
from typing import Any

from sqlalchemy.orm import Session

_caches: weakref.WeakKeyDictionary[Any, dict[str, dict]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def of(session: Session, name: str) -> dict:
    """The cache ``name`` of the session's database engine."""
    engine = session.get_bind()
    caches = _caches.get(engine)
    if caches is None:
        with _lock:
            caches = _caches.setdefault(engine, {})
    found = caches.get(name)
    if found is None:
        with _lock:
            found = caches.setdefault(name, {})
    return found
