"""A season's final standings: the players who played in it, in the conservative order."""

from __future__ import annotations

import numpy as np

from app import rating
from app.core.ladder import LadderRow
from app.players.records import hodge, page_se, provisional
from app.rating.ranking import leaderboard_order
from app.storage.read_model import Table


def standings(table: Table, ladder: LadderRow, counts: np.ndarray) -> list[tuple]:
    """A season's final standings: the players with games in ``counts`` (their records in the season, COUNTERS
    by row), in the conservative order (established players first, each group by conservative strength, ties
    by key), as rows of (rank, key, name, elo, strength_se in Elo points, conservative, provisional, games, wins,
    draws, losses).  Standard errors for these players only, the same numbers the leaderboard shows."""
    rows = np.flatnonzero(counts[:, 0] > 0)
    se = page_se(table, ladder, rows)
    score = rating.conservative(hodge(table)[rows], se)
    group = provisional(table, ladder.k)[rows]
    order = leaderboard_order(score, group, table.key_rank()[rows])
    elo = rating.elo_equivalent(hodge(table)[rows])
    se_elo = se * rating.ELO_PER_LOGIT
    out = []
    for rank, n in enumerate(order.tolist(), start=1):
        i = rows[n]
        record = counts[i, :4].tolist()
        out.append(
            (
                rank,
                table.keys[i],
                table.names[i],
                float(elo[n]),
                float(se_elo[n]),
                float(score[n]),
                bool(group[n]),
                *record,
            )
        )
    return out
