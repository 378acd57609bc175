"""A ladder of many players, refitted and reported on in a process whose address space is capped.

    python -m tests.scale DATABASE_URL PLAYERS CAP_GB

Run by ``tests/test_scale.py`` and ``tests/test_scale_postgres.py`` in a
process of its own: it caps its address space (``RLIMIT_AS``), so any
players × players array fails it with a MemoryError.  It seeds a ladder with
the defaults (k = 1) and two games per player, runs a refit (fit,
identifiability, report) and every ladder-wide report, and prints one JSON
line of what each took.
"""

from __future__ import annotations

import json
import resource
import sys
import time

import numpy as np

from app.analysis import refit_jobs, refit_run, refit_views, reports
from app.analysis.schemas import RefitIn
from app.core.config import Settings
from app.core.db import Database
from app.core.migrate import upgrade
from app.domain.access import ladder_for_read
from app.games.apply import import_games
from app.games.schemas import GameIn
from app.ladders.schemas import LadderCreate
from app.ladders.service import audit, create_ladder

CHUNK = 200_000


def main(url: str, players: int, cap_gb: float) -> dict:
    cap = int(cap_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    upgrade(Settings(database_url=url).sqlalchemy_url)
    db = Database.from_settings(Settings(database_url=url))
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    with db.writing() as session:
        create_ladder(session, LadderCreate(slug="big", k=1))
    rng = np.random.default_rng(0)
    first = np.tile(np.arange(players), 2)
    second = (first + rng.integers(1, 50, len(first))) % players  # neighbours meet: a ladder's matchmaking
    for lo in range(0, len(first), CHUNK):
        pairs = zip(first[lo : lo + CHUNK].tolist(), second[lo : lo + CHUNK].tolist(), strict=True)
        games = [
            GameIn.model_validate({"sides": [{"players": [f"p{a}"], "rank": 1}, {"players": [f"p{b}"], "rank": 2}]})
            for a, b in pairs
        ]
        with db.writing() as session:
            import_games(session, ladder_for_read(session, "big", fresh=True), games)
    seconds["import"] = time.perf_counter() - t
    t = time.perf_counter()
    with db.writing() as session:
        job = refit_jobs.start_refit(session, ladder_for_read(session, "big", fresh=True), RefitIn(restarts=1))
    refit_run.run_refit(db, job.ladder_id, job.id)
    seconds["refit"] = time.perf_counter() - t
    with db.reading() as session:
        done = refit_views.get_refit(session, ladder_for_read(session, "big", fresh=True), job.id)
        status, error = done.status, done.error
    out = {"players": players, "refit": status, "error": error}
    with db.snapshot() as session:
        ladder = ladder_for_read(session, "big", fresh=True)
        for name, report in [
            ("identifiability", lambda: reports.identifiability(session, ladder, ratings="current")),
            ("intransitivity", lambda: reports.intransitivity(session, ladder)),
            ("canonical", lambda: reports.canonical(session, ladder, 500)),
            ("audit", lambda: audit(session, ladder)),
        ]:
            t = time.perf_counter()
            found = report()
            seconds[name] = time.perf_counter() - t
            if name == "audit":
                out["consistent"] = found.consistent
    db.dispose()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out | {"seconds": seconds, "peak_mb": peak}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))))
