"""Per-process read caches, one set per database engine (a process may talk to several databases)."""

from __future__ import annotations

import threading
import weakref
from typing import Any

from sqlalchemy.orm import Session

_caches: weakref.WeakKeyDictionary[Any, dict[str, dict]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def of(source: Session | Any, name: str) -> dict:
    """The cache ``name`` of a database engine: given itself, or a session or reader bound to it."""
    engine = source.get_bind() if isinstance(source, Session) else getattr(source, "engine", source)
    caches = _caches.get(engine)
    if caches is None:
        with _lock:
            caches = _caches.setdefault(engine, {})
    found = caches.get(name)
    if found is None:
        with _lock:
            found = caches.setdefault(name, {})
    return found
