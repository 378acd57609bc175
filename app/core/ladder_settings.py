"""The ladder's settings, declared once: for each, whether a new ladder takes it and whether an admin may change it
later, whether a game commit depends on it, whether null is one of its values, its bounds, and what the API says
of it.  What lists the settings derives from :data:`SETTINGS`: the bounds and descriptions of the fields of
``LadderCreate``, ``LadderPatch`` and ``LadderOut`` (:mod:`app.ladders.schemas`), the settings a game commit reads
again under its lock (:mod:`app.storage.ladders`), and the 422 for a null sent for one that takes none
(:mod:`app.ladders.service`).  The ladder's other columns (its version, counts, seats' state, …) are its state.

To add a setting:

1. its entry in :data:`SETTINGS`;
2. its column in ``app.storage.tables.Ladder``, with a migration (the column's ``server_default`` is for the rows
   there already: it may differ from a new ladder's default);
3. its field in :class:`app.core.ladder.LadderRow`, which storage reads by the same name;
4. its line in ``LadderCreate`` (unless ``create`` is false: its type and ``_create(name, default)``),
   ``LadderPatch`` (unless ``patch`` is false: its type or None, and ``_patch(name)``) and ``LadderOut`` (its type,
   and ``_out(name)``): the types are for mypy, the rest comes from here.

``tests/test_ladder_settings.py`` names whatever is missed, and any field or column that is neither a setting here
nor the ladder's state that the test lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The largest settings a ladder takes: η, and the noise and drift in Elo points.  No rate choice goes past them
#: (``app.ladders.schemas.RULE_LIMITS``, in the rule's units), so a ladder's rule can always be set again as it runs,
#: and its export restored.
MAX_ETA, MAX_NOISE_ELO, MAX_DRIFT_ELO = 10.0, 500.0, 2000.0
MAX_INACTIVE_DAYS = 36_500


@dataclass(frozen=True)
class Setting:
    """One setting of a ladder.  Its descriptions: ``description`` is what it is, ``LadderOut``'s, and the requests'
    unless they say otherwise; ``on_create`` is ``LadderCreate``'s and ``on_patch`` ``LadderPatch``'s where they
    do (None: ``description``)."""

    #: ``LadderCreate`` takes it (false: a new ladder starts at the column's default; only a patch sets it).
    create: bool = True
    #: An admin may change it later (``LadderPatch``).
    patch: bool = True
    #: A game commit applies it: the commit reads it again under the ladder's lock, and retries if it changed.
    commit: bool = False
    #: Null is one of its values (``LadderOut`` may show it, a patch may send it); a patch's null for another is a 422.
    nullable: bool = False
    #: Its bounds in the requests (pydantic's ``Field``: ``ge``/``gt`` the lower, ``le``/``lt`` the upper).
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    description: str | None = None
    on_create: str | None = None
    on_patch: str | None = None

    def bounds(self) -> dict[str, Any]:
        """Its bounds, as pydantic's ``Field`` takes them."""
        bounds = {"ge": self.ge, "gt": self.gt, "le": self.le, "lt": self.lt}
        return {name: value for name, value in bounds.items() if value is not None}


DRIFT = (
    "How far a player's strength may wander in a year without games, in Elo points (one standard deviation): their "
    "`strength_se` grows with the time since their last game, as the square root of it, so a player who stopped "
    "playing sinks in the conservative order and climbs back with their next games. Time is the ladder's clock, the "
    "newest `played_at` of its games. 0: uncertainty ignores time."
)
DRIFT_STEPS = (
    "The online step follows what is known of each player, as Glicko's and a Kalman filter's do: it is taken at "
    "the player's experience, their games worn away by the drift while they were away, so it is large for a "
    "newcomer and again for a player back from a long absence, and small for a settled regular (with `eta_tau`; "
    "a constant η ignores it). With it, the drift is one of the values the auto refits choose (`auto_rate`). "
    "false: the step counts games and ignores time (ladders created before it existed)."
)
SEAT_PRIOR = (
    "How far a seat's advantage may be from 0 before its first game, in logits (one standard deviation of its "
    "prior; mathematics §5): small, and the first games move it little; large, and they move it a lot. With "
    "`auto_rate`, the auto refits choose it from the log, with the rate. Ladders created before the setting keep 1."
)
RATE_RULE = (
    "The online rule. `steps`: the normalised step at η, shrinking with each player's experience (`eta_tau`; "
    "mathematics §3). `variance`: every player carries a variance of their strength, which grows by the `noise` "
    "before each game and by the drift while they are away (with `drift_steps`), and shrinks by what each game "
    "tells; it sets the size of their step, as Glicko's and a Kalman filter's do, so a regular keeps moving and a "
    "newcomer moves fast (mathematics §3b; a newcomer starts at the variance η/√2, and `eta_tau` is not used). "
    "Changing it replays the log after the latest checkpoint with the new rule. With `auto_rate`, the auto refits "
    "also try the other rule and move the ladder to it when its log shows that it pays."
)
NOISE = (
    "The variance rule's process noise: how far a player's strength may wander with each game they play, in Elo "
    "points (one standard deviation; mathematics §3b). Larger: steps stay larger, and ratings follow a changing "
    "field faster but are noisier. Always > 0, so no player's rating ever freezes. With `auto_rate`, the auto "
    "refits choose it from the log."
)
CYCLES = (
    "Under the variance rule, the share of each step that goes to the cyclic discs (the second disc on; "
    "mathematics §3b), the rest going to the first disc, which holds the straight ranking: 0 rates like a "
    "straight ladder (the best where games follow a ranking), larger learns rock-paper-scissors cycles faster. "
    "From 0 to below 1; ignored with k = 1. With `auto_rate`, the auto refits choose it from the log."
)
INACTIVE_AFTER_DAYS = (
    "Players who have not played for this many days (by the ladder's clock, the newest `played_at` of its games) "
    "leave the default leaderboard and the suggested opponents until their next game; `inactive_reason` says why. "
    "null: only an admin's `active: false` takes a player off."
)
SEASON_EVERY = (
    "Close a season by itself at the end of every calendar `month` or `quarter` (UTC), named after it (`2026-11`, "
    "`2026-Q4`), with the games played in it; a period without games closes none. null (the default): only an "
    "admin closes a season."
)
SEASON_PULL = (
    "The pull each automatic close applies (as `pull` of `POST …/seasons`): 0 (the default) keeps the ratings as "
    "they are, 1 starts everyone afresh."
)
PLAY = (
    "The kinds of games the ladder plays; a posted game of another kind is refused (422) with the rule it breaks. "
    "Every kind is allowed unless turned off, as on ladders created before the setting. The web page's record form "
    "offers only these."
)
#: Said of a setting of the rate when a patch sets it.
_REPLAYS = " Under the variance rule, setting it pins the rate and replays the log."

#: Every setting of a ladder, by name, in ``LadderOut``'s order.
SETTINGS: dict[str, Setting] = {
    "slug": Setting(patch=False, on_create="URL name of the ladder: lower-case letters, digits, `-`, `_`."),
    "name": Setting(nullable=True),
    "k": Setting(
        commit=True,
        ge=1,
        le=8,
        on_create="Number of 2-D discs; rating vectors have 2k numbers (mathematics §1).",
        on_patch="A new number of discs: every player's initial vector gets the new length (its first numbers "
        "kept, new ones seeded as a new player's are), checkpoints of earlier refits are set aside, and the whole "
        "log is replayed from the start, exactly; a voided game's recorded vectors are cut or padded with zeros.",
    ),
    "eta": Setting(
        commit=True,
        ge=0,
        le=MAX_ETA,
        # LadderCreate's text, which quotes the defaults, is with them (app.ladders.schemas ETA).
        on_patch="A new learning rate η: the log after the latest checkpoint is replayed with it, exactly, as a "
        "void's replay is, and `/audit` checks it.",
    ),
    "eta_tau": Setting(
        commit=True,
        nullable=True,
        gt=0,
        le=1e6,
        on_create="A player's η after n games is η / sqrt(1 + n / eta_tau): newcomers move fast, regulars settle. "
        "null: η is constant ([Guide]).",
        on_patch="A new τ (η shrinking with games played), replayed the same way; null: η becomes constant.",
    ),
    "init_scale": Setting(patch=False, gt=0, le=100, on_create="Std. dev. of initial vectors (mathematics §2)."),
    "init_offset": Setting(
        patch=False,
        nullable=True,
        # LadderCreate's text, which quotes the default, is with it (app.ladders.schemas INIT_OFFSET).
    ),
    "seed": Setting(patch=False, ge=0, lt=2**63, on_create="Seed of initial vectors; random when omitted."),
    "auto_create_players": Setting(on_create="Create unknown players when a game names them."),
    "auto_refit": Setting(
        on_create="From 1,000 games on, refit the whole log in the background each time it has grown by 20%, and "
        "apply the refit as a checkpoint only if it would have predicted the latest games better than the online "
        "ratings did (GET …/refits shows each one).",
    ),
    "auto_rate": Setting(
        description="The auto refits choose the learning rate from the log (false: it is pinned as set).",
        on_create="Each auto refit also chooses the learning rate (η and τ, and the drift where `drift_steps` is "
        "on) from the ladder's own log: 25 rates are replayed over every game, each game predicted only from the "
        "games before it (then 0, half and twice the drift, at 15 rates each), and the variance rule's newcomer "
        "variance and `noise` (`rate_rule`, 28 pairs, then the best pair's `cycles`), and the one that predicted "
        "best is applied (the log replayed with it, exactly) if it beat the ladder's rate by more than one standard "
        "error over games. false: the rate stays as set (pinned).",
        on_patch="true: the auto refits choose the learning rate from the ladder's log; false: pin it. Setting "
        "`eta` or `eta_tau` pins it too, unless `auto_rate: true` is sent with them.",
    ),
    "private": Setting(create=False, on_patch="Reads need a key of the ladder too (any role)."),
    "case_insensitive_keys": Setting(
        commit=True,
        on_create='Match player keys case-insensitively: "Ann" and "ann" are one player. Keys are stored '
        "case-folded (Unicode case folding), and a new player's spelling, where folding changed it, becomes their "
        "name. false: keys match exactly, as ladders created before this setting do.",
        on_patch="true: match player keys case-insensitively from now on; every key (and alias) becomes its "
        "case-folded form in the players and the log, a player without a name keeping the old spelling as it. 409 "
        "naming them if two keys would become one. false: match exactly again (keys stay as they are).",
    ),
    "drift": Setting(commit=True, ge=0, le=MAX_DRIFT_ELO, description=DRIFT),
    "drift_steps": Setting(commit=True, description=DRIFT_STEPS),
    "seat_prior": Setting(
        ge=0.01,
        le=10,
        description=SEAT_PRIOR,
        on_patch=SEAT_PRIOR + " With seats, setting it pins the rate, as `eta` does, and replays the log.",
    ),
    "rate_rule": Setting(
        commit=True, description=RATE_RULE, on_patch=RATE_RULE + " Setting it pins the rate, as `eta` does."
    ),
    "noise": Setting(commit=True, gt=0, le=MAX_NOISE_ELO, description=NOISE, on_patch=NOISE + _REPLAYS),
    "cycles": Setting(commit=True, ge=0, lt=1, description=CYCLES, on_patch=CYCLES + _REPLAYS),
    "inactive_after_days": Setting(
        nullable=True,
        ge=1,
        le=MAX_INACTIVE_DAYS,
        description=INACTIVE_AFTER_DAYS,
        on_patch=INACTIVE_AFTER_DAYS + " Send null to turn it off.",
    ),
    "season_every": Setting(
        nullable=True,
        description=SEASON_EVERY,
        on_patch=SEASON_EVERY + " Send null to turn it off; the first close is at the end of this period.",
    ),
    "season_pull": Setting(ge=0.0, le=1.0, description=SEASON_PULL),
    "seats": Setting(
        patch=False,
        nullable=True,
        description="The learned seats, as the results so far set them (mathematics §5); null without seats.",
        on_create='Seats whose advantages the ladder learns from the results, e.g. ["white", "black"], '
        '["home", "away"], ["server", "receiver"]; a game\'s side takes one with `seat` (mathematics §5).',
    ),
    "play": Setting(
        description=PLAY, on_patch=PLAY + " Only the kinds given change; games recorded before stay as they are."
    ),
}
