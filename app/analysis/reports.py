"""Ladder-wide analyses of the current ratings: identifiability, intransitivity, canonical form
(mathematics §10, §12)."""

from __future__ import annotations

import numpy as np
from sqlalchemy.orm import Session

from app import storage
from app.analysis.schemas import (
    BlockOut,
    CanonicalOut,
    CanonicalPlayer,
    IdentifiabilityOut,
    IntransitivityOut,
    NotComparable,
)
from app.core.cursors import encode_cursor
from app.core.errors import Conflict
from app.core.jobs import Progress
from app.core.ladder import LadderRow
from app.rating.elo import pair_counts
from app.rating.identifiability import Identifiability
from app.rating.identifiability import identifiability as identify
from app.rating.intransitivity import canonical as canonical_form
from app.rating.intransitivity import empirical_hodge_of, hodge_norms


def _ignore(fraction: float) -> None:
    pass


def identifiability_out(found: Identifiability, keys: list[str], version: int | None = None) -> IdentifiabilityOut:
    return IdentifiabilityOut(
        ladder_version=version,
        unique=found.unique,
        comparable=[keys[i] for i in found.comparable],
        not_comparable=[
            NotComparable(key=keys[row["player"]], reason=row["reason"], direction=row["direction"])
            for row in found.not_comparable
        ],
        clique=[keys[i] for i in found.clique],
        components=[[keys[i] for i in group] for group in found.components],
    )


#: A refit's result lists at most this many players (and components) per list of its identifiability.
SUMMARY_LIST = 100


def identifiability_summary(found: Identifiability, keys: list[str]) -> dict:
    """A refit's identifiability: the report with each list cut to :data:`SUMMARY_LIST` entries (a component to
    as many players), beside the full lengths in ``counts``; ``GET …/identifiability?ratings=refit`` has them
    all (stored whole, a large ladder's lists would make every look at the job parse a huge result)."""
    n = SUMMARY_LIST
    shown = Identifiability(
        unique=found.unique,
        comparable=found.comparable[:n],
        not_comparable=found.not_comparable[:n],
        clique=found.clique,
        components=[group[:n] for group in found.components[:n]],
    )
    counts = {
        "comparable": len(found.comparable),
        "not_comparable": len(found.not_comparable),
        "components": len(found.components),
    }
    truncated = any(len(group) > n for group in found.components) or max(counts.values()) > n
    out = identifiability_out(shown, keys).model_dump(exclude={"ladder_version"})
    return out | {"counts": counts, "truncated": truncated}


def identifiability(
    session: Session, ladder: LadderRow, progress: Progress = _ignore, ratings: str = "current"
) -> IdentifiabilityOut:
    """mathematics §10 on the current ratings, or on the latest finished refit's vectors."""
    state = storage.log.read(session, ladder, from_start=True)
    progress(0.4)
    C = state.stored.copy()
    if ratings == "refit":
        job = storage.refits.latest_done(session, ladder.id)
        if job is None:
            raise Conflict(
                "This ladder has no finished refit yet: POST …/refits first, or use ratings=current.", field="ratings"
            )
        assert job.player_ids is not None  # a finished refit's fitted rows
        ids = storage.codec.unpack_ids(job.player_ids)
        if len(job.vectors or b"") != 8 * 2 * ladder.k * len(ids):
            raise Conflict(
                f"The latest refit fitted another k than the ladder's k = {ladder.k}: run a refit again.",
                field="ratings",
            )
        assert job.vectors is not None  # a finished refit's, of the length checked above
        C[np.searchsorted(state.player_ids, ids)] = storage.codec.unpack_matrix(job.vectors, 2 * ladder.k)
    found = identify(C, state.log, len(state.keys))
    progress(0.9)
    return identifiability_out(found, state.keys, ladder.version)


def intransitivity(session: Session, ladder: LadderRow, progress: Progress = _ignore) -> IntransitivityOut:
    """I of the current A (mathematics §12) and of the empirical win rates on the observed pairs."""
    state = storage.log.read(session, ladder, from_start=True)
    progress(0.5)
    fitted = hodge_norms(state.stored)
    empirical, pairs = empirical_hodge_of(pair_counts(state.log, len(state.keys)))
    return IntransitivityOut(
        ladder_version=ladder.version,
        measure=fitted.intransitivity,
        transitive_norm=fitted.transitive_norm,
        cyclic_norm=fitted.cyclic_norm,
        empirical=None
        if empirical is None
        else {
            "measure": empirical.intransitivity,
            "transitive_norm": empirical.transitive_norm,
            "cyclic_norm": empirical.cyclic_norm,
            "pairs": pairs,
            "converged": empirical.converged,
        },
    )


def canonical(session: Session, ladder: LadderRow, limit: int, after: int = 0) -> CanonicalOut:
    """A page of players' canonical disc coordinates, in the order they joined (after player id ``after``), and
    the per-block summary (mathematics §12); the form is computed once per ladder version."""
    table = storage.read_model.current_table(session, ladder)
    form = table.derived("canonical", lambda: canonical_form(table.C))
    dominant = form.blocks[0] if form.blocks else None
    strength = form.disc_strength() if dominant is not None and dominant.transitive else None
    start = int(np.searchsorted(table.ids, after, side="right"))
    rows = range(start, min(start + limit, len(table.ids)))
    more = rows.stop < len(table.ids)
    return CanonicalOut(
        blocks=[
            BlockOut(sigma=b.sigma, share=b.share, kind="transitive" if b.transitive else "cyclic") for b in form.blocks
        ],
        players=[
            CanonicalPlayer(
                key=table.keys[n],
                coordinates=form.D[n].tolist(),
                strength=None if strength is None else float(strength[n]),
                consistency=None if strength is None else float(form.D[n, 1]),
            )
            for n in rows
        ],
        next_cursor=encode_cursor({"after": int(table.ids[rows.stop - 1])}) if more and len(rows) else None,
        ladder_version=table.version,
    )
