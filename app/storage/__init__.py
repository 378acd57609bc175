"""Storage: every read and write of the rating rows, and their codec.

Players (vectors and counters) and their per-process read model, the game log (games and participants),
idempotency records, the ladders' change log (events), refit jobs and checkpoints, API keys, player aliases,
and ladder rows with the version that keys the per-process read caches.  Domain services call these
functions; they write no SQL and decode no bytes.  This package imports no
domain, router or web framework: only the ORM models, the driver helpers and
the pure rating core (to encode the log), and the domain's errors for the few
refusals only storage can see (a key too long once case-folded, a ladder changed under a write).
"""

from app.storage import (
    aliases,
    as_of,
    cache,
    codec,
    events,
    games,
    idempotency,
    keys,
    ladder_state,
    ladders,
    log,
    players,
    read_model,
    refits,
    seasons,
    state_before,
)

__all__ = [
    "aliases",
    "as_of",
    "cache",
    "codec",
    "events",
    "games",
    "idempotency",
    "keys",
    "ladder_state",
    "ladders",
    "log",
    "players",
    "read_model",
    "refits",
    "seasons",
    "state_before",
]
