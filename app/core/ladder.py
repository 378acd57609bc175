"""A ladder as the service works with it: its settings, read in one statement (:mod:`app.storage.ladders` reads
and writes the rows), and what follows from them: how its keys match, its players' initial vectors, its online
rule, its seats."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from app import rating
from app.core.errors import InvalidInput
from app.rating.seats import Seats


@dataclass(frozen=True)
class LadderRow:
    """A ladder's settings as read in one statement."""

    id: int
    slug: str
    name: str | None
    k: int
    eta: float
    eta_tau: float | None
    init_scale: float
    init_offset: list[float] | None
    seed: int
    auto_create_players: bool
    auto_refit: bool
    #: The auto refits choose η and τ from the log (false: pinned).
    auto_rate: bool
    write_key_hash: str
    created_at: datetime
    version: int
    private: bool
    seats: list[str] | None
    #: The version of the latest change a copy of the players cannot follow row by row (a merge), or that changes
    #: the settings readers use (k, the learning rate, how keys match, the aliases).
    reset_version: int
    #: Player keys match after Unicode case folding ("Ann" is "ann"); new players' keys are stored folded.
    case_insensitive_keys: bool
    #: How far a strength may wander in a year without games, in Elo points (0: standard errors ignore time).
    drift: float
    #: The online step follows each player's experience, worn away by the drift while they are away.
    drift_steps: bool
    #: The standard deviation (logits) of a learned seat's advantage before its first game.
    seat_prior: float
    #: Players idle this many days (the ladder's clock) leave the default leaderboard; None: never.
    inactive_after_days: int | None
    #: The online rule: "steps" (mathematics §3) or "variance" (mathematics §3b).
    rate_rule: str
    #: The variance rule's process noise per game, a standard deviation in Elo points.
    noise: float
    #: The variance rule's share of each step the cyclic discs take (φ).
    cycles: float
    #: The kinds of games it plays (:data:`PLAY`'s keys); a row without it plays everything.
    play: dict | None
    #: A season closes by itself every ``month`` or ``quarter`` (UTC), with the pull ``season_pull``; None: never.
    season_every: str | None
    season_pull: float
    #: The version of the latest rewrite of most players' ratings, whose rows keep their version stamps: copies of
    #: the players older than it are read anew (:func:`app.storage.players.save_vectors`).
    rewritten_version: int = 0
    #: Alias -> the key of the player it leads to (not a column: :mod:`app.storage.aliases`).
    aliases: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "play", PLAY | (self.play or {}))

    def folded_key(self, key: str) -> str:
        """``key`` as the ladder matches it: case-folded if it matches keys so."""
        return fold(key) if self.case_insensitive_keys else key

    def player_key(self, key: str) -> str:
        """The key of the player ``key`` names here: case-folded if the ladder matches keys so, then through its
        aliases (a key no player has yet comes back as the key a new player would get)."""
        folded = self.folded_key(key)
        return self.aliases.get(folded, folded)

    def initial_vectors(self, keys: list[str]) -> np.ndarray:
        """The seeded initial vectors new players of these keys get here (mathematics §2)."""
        return rating.initial_vectors(keys, self.k, self.seed, self.init_scale, self.init_offset)

    def learning_rate(self) -> rating.LearningRate | rating.VarianceRule:
        """The ladder's online rule.  The shrinking-step rule: η, shrinking with each player's experience when it
        has an ``eta_tau``; the experience wears away with the drift (in logits a year) while a player is away, if
        the ladder's steps follow it.  The variance rule (mathematics §3b): a newcomer's variance η/√2, the noise
        per game, the drift while away (if the steps follow it), and the cyclic discs' share of a step."""
        if self.variance_rule:
            noise = (self.noise / rating.ELO_PER_LOGIT) ** 2
            return rating.VarianceRule.from_eta(self.eta, noise, self.step_drift(), self.cycles)
        return rating.LearningRate(self.eta, self.eta_tau, self.step_drift())

    @property
    def variance_rule(self) -> bool:
        """Whether the ladder is on the variance rule (its players carry variances, mathematics §3b)."""
        return self.rate_rule == VARIANCE

    def step_drift(self) -> float:
        """The drift the online steps follow, in logits a year (0: they count games; so with a constant η, whose
        steps do not count anything).  Under the variance rule: the drift, if the steps follow it."""
        if self.variance_rule:
            return self.drift / rating.ELO_PER_LOGIT if self.drift_steps else 0.0
        return self.drift / rating.ELO_PER_LOGIT if self.drift_steps and self.eta_tau is not None else 0.0

    def seat_precision(self) -> float:
        """The precision of the seats' prior, 1/seat_prior²."""
        return rating.prior_precision(self.seat_prior)

    def fresh_seats(self) -> Seats | None:
        """The ladder's seats before any game (None without seats)."""
        return Seats.fresh(len(self.seats), self.seat_precision()) if self.seats else None

    def seat_index(self) -> dict[str, int]:
        """Seat name -> index (empty without seats)."""
        return {name: n for n, name in enumerate(self.seats or [])}


#: What a ladder plays unless it says otherwise: every kind of game, as ladders from before the setting do.
PLAY = {"singles": True, "doubles": True, "free_for_all": True, "draws": True, "points": None, "best_of": 1}


def fold(key: str) -> str:
    """A player key as a case-insensitive ladder matches and stores it: Unicode case folding ("Straße" is
    "strasse"); a key that folding would take beyond 128 characters is refused (422)."""
    folded = key.casefold()
    if len(folded) > MAX_KEY:
        message = f"{key[:40]!r}… is longer than {MAX_KEY} characters once case-folded"
        raise InvalidInput(f"key: {message}", errors=[{"field": "key", "message": message}])
    return folded


MAX_KEY = 128
#: The ladder's ``rate_rule`` of the variance rule (mathematics §3b); the other is "steps".
VARIANCE = "variance"
