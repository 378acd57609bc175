"""Storage: every SQL statement, the row codec and the tables (``tables.py``, the ORM models).

Players (vectors and counters) and their per-process read model, the game log (games and participants),
idempotency records, the ladders' change log (events), refit jobs and checkpoints, API keys, player aliases,
seasons, challenges, outgoing webhooks (and the Slack command's secret), and ladder rows with the version that keys the
per-process read caches.  The layers above call these functions; they write no SQL and decode no bytes.  This
package imports only :mod:`app.rating` (to encode the log) and :mod:`app.core.errors`, for the few refusals only
storage can see (a key too long once case-folded, a ladder changed under a write).
"""

from app.storage import (
    aliases,
    as_of,
    cache,
    challenges,
    codec,
    events,
    games,
    idempotency,
    keys,
    ladder_state,
    ladders,
    log,
    moments,
    players,
    read_model,
    refits,
    seasons,
    state_before,
    webhooks,
)

__all__ = [
    "aliases",
    "as_of",
    "cache",
    "challenges",
    "codec",
    "events",
    "games",
    "idempotency",
    "keys",
    "ladder_state",
    "ladders",
    "log",
    "moments",
    "players",
    "read_model",
    "refits",
    "seasons",
    "state_before",
    "webhooks",
]
