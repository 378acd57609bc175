"""The database schema (SQLAlchemy 2 ORM).

The game log (``games`` with their full input, ``participants`` with every
member's vector before and after) is the source of truth; ``players.vector``
is a materialised view of it (mathematics §13).  Vectors are stored as raw float64
bytes so that they round-trip bit for bit.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    TypeDecorator,
    UniqueConstraint,
    false,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only auto-increments INTEGER PRIMARY KEY columns.
BigId = BigInteger().with_variant(Integer(), "sqlite")


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator):
    """Timestamps stored in UTC and read back timezone-aware on every database.

    SQLite has no time zone type: SQLAlchemy stores the wall-clock digits and
    reads back naive datetimes, so values are converted to UTC first.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: give a time zone")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar = {datetime: UTCDateTime()}
    #: Every model here is declared by ``__tablename__``, so each is mapped to a :class:`Table` (not any
    #: ``FromClause``, as :class:`DeclarativeBase` types it).
    __table__: ClassVar[Table]


class LadderSlug(Base):
    """A ladder's slug, unique, and the ladder it names: a table of no ladder (docs/operations.md §6), so slugs stay
    unique where the ladders' rows are spread by id, and a slug finds its ladder's id in one place."""

    __tablename__ = "ladder_slugs"

    slug: Mapped[str] = mapped_column(String(64), primary_key=True)
    ladder_id: Mapped[int] = mapped_column(BigId)


class Ladder(Base):
    __tablename__ = "ladders"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    #: Unique among the ladders not deleted, as :class:`LadderSlug` keeps it (SQLite also by a constraint here).
    slug: Mapped[str] = mapped_column(String(64), index=True)
    name: Mapped[str | None] = mapped_column(String(200))
    k: Mapped[int]
    eta: Mapped[float]
    #: η of a player after n games is eta / sqrt(1 + n / eta_tau); null: η is constant ([Guide]).
    eta_tau: Mapped[float | None]
    init_scale: Mapped[float]
    init_offset: Mapped[list[float] | None] = mapped_column(JSON)
    seed: Mapped[int] = mapped_column(BigInteger)
    auto_create_players: Mapped[bool]
    #: Start a guarded background refit as the log grows (app.analysis.auto).
    auto_refit: Mapped[bool] = mapped_column(default=False, server_default=false())
    #: The auto refits also choose η and τ from the log (app.rating.tuning); false: pinned as an admin set them.
    auto_rate: Mapped[bool] = mapped_column(default=True, server_default=true())
    #: The latest rate a refit chose and applied, and its evidence (``RateChoiceOut``); null: none yet.
    rate_choice: Mapped[dict | None] = mapped_column(JSON)
    #: How far a strength may wander in a year without games (Elo points, one standard deviation): a player's
    #: standard error grows with the time since their last game; 0: it does not.
    drift: Mapped[float] = mapped_column(default=100.0, server_default="100.0")
    #: The online step is taken at a player's experience, their games worn away by the drift while they were away
    #: (app.rating.experience); false: at their number of games (ladders created before this existed).
    drift_steps: Mapped[bool] = mapped_column(default=True, server_default=false())
    #: The standard deviation (logits) of a learned seat's advantage before its first game (mathematics §5).
    seat_prior: Mapped[float] = mapped_column(default=1.0, server_default="1.0")
    #: Players who have not played for this many days (the ladder's clock) leave the default leaderboard; null: never.
    inactive_after_days: Mapped[int | None]
    #: The online rule: 'steps' (a step that shrinks with experience, mathematics §3) or 'variance' (a per-player
    #: variance with process noise sizes every step, mathematics §3b).
    rate_rule: Mapped[str] = mapped_column(String(16), default="steps", server_default="steps")
    #: The variance rule's process noise per game, a standard deviation in Elo points (mathematics §3b).
    noise: Mapped[float] = mapped_column(default=5.5, server_default="5.5")
    #: The variance rule's share of each step that the cyclic discs take (φ, 0 to below 1; mathematics §3b).
    cycles: Mapped[float] = mapped_column(default=0.0, server_default="0.0")
    #: The hash of the key the ladder was created with (also its first admin key in api_keys).
    write_key_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: Bumped by every write transaction that changes the ladder's players, ratings or log: per-process read
    #: caches compare it (a largest game id would not do on PostgreSQL, where ids commit out of order).
    version: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    #: The version of the latest change a copy cannot follow row by row (a merge deletes a player): copies older
    #: than it are read anew.
    reset_version: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    #: The version of the latest rewrite of most players' ratings (a replay of the log), whose rows keep their
    #: ``changed_version``: copies of the players older than it are read anew (migration 0041).
    rewritten_version: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    #: A deleted ladder's row stays as a tombstone (slug ``~deleted~{id}``, nothing in it), so its id is never
    #: reused: caches kept by ladder id in every process can never be mistaken for another ladder's.
    deleted_at: Mapped[datetime | None]
    #: Reads need a key of the ladder too.
    private: Mapped[bool] = mapped_column(default=False, server_default=false())
    #: Player keys are matched after Unicode case folding, and stored folded ("Ann" and "ann" are one player).
    case_insensitive_keys: Mapped[bool] = mapped_column(default=False, server_default=false())
    #: The seq of the ladder's latest game.
    last_seq: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    #: The number of the ladder's latest event (:class:`LadderEvent`), never given out again.
    last_event: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    #: The names of the seats whose advantages the ladder learns (mathematics §5), or null.
    seats: Mapped[list[str] | None] = mapped_column(JSON)
    #: Each seat's advantage (logits) and information now: {"advantage": [...], "information": [...]}.
    seat_state: Mapped[dict | None] = mapped_column(JSON)
    #: How many players and how many games that count (not voided) the ladder has, kept by the transactions
    #: that change them (in the statement that bumps ``version``).
    players_count: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    games_count: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    #: The comparisons (pairs of sides) of those games: one a two-sided game, N(N - 1)/2 a game of N sides (what
    #: the auto refits' schedule counts: a free-for-all of 27 players tells as much as 351 pairs).
    comparisons_count: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    #: What the draw model is fitted on, kept by the game commits and voids: the two-sided games that count and
    #: were drawn, and the sum over those games of 2·min(p, 1 - p), p the first side's expected score when played.
    draws: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    draw_room: Mapped[float] = mapped_column(default=0.0, server_default="0")
    #: The sum of every player's vector and their number, {"sum": [...], "count": m}, kept by game commits; null:
    #: recompute it from the players (after a replay or a new player).
    field_sum: Mapped[dict | None] = mapped_column(JSON)
    #: The kinds of games the ladder plays, {"singles": true, "doubles": true, "free_for_all": true, "draws": true,
    #: "points": null, "best_of": 1} (``app.core.ladder.PLAY``), which posted games must follow.
    play: Mapped[dict | None] = mapped_column(JSON)
    #: Close a season by itself at the end of every ``month`` or ``quarter`` (UTC); null: only an admin closes one.
    season_every: Mapped[str | None] = mapped_column(String(16))
    #: The pull each automatic close applies (0: the ratings carry on as they are).
    season_pull: Mapped[float] = mapped_column(default=0.0, server_default="0")
    #: When the current period ends: the next automatic close is due then (null without ``season_every``).
    season_due: Mapped[datetime | None]
    #: A replay's history written ahead of the change it is for (a new rate, a refit's checkpoint), in transactions
    #: of its own, by the rewrite named here (``token@owner``, app.domain.rerating); null: the stored history is the
    #: log's.  Whoever locks the ladder's players and finds another's rewrite here replays the log first.
    history_rewrite: Mapped[str | None] = mapped_column(String(200))


class ApiKey(Base):
    """A ladder's bearer key: only its SHA-256 hash is kept; ``read`` reads a private ladder, ``write`` also posts,
    ``admin`` also manages."""

    __tablename__ = "api_keys"
    __table_args__ = (UniqueConstraint("ladder_id", "key_hash"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None]
    #: Updated at most once a minute per key and server process.
    last_used_at: Mapped[datetime | None]
    #: From then on the key is refused; null: it does not expire.
    expires_at: Mapped[datetime | None]


class Player(Base):
    __tablename__ = "players"
    __table_args__ = (
        UniqueConstraint("ladder_id", "key"),
        Index("ix_players_ladder_id_changed_version", "ladder_id", "changed_version"),
        # A ladder's players in id order without a sort; PostgreSQL uses the primary key (migration 0020).
        Index("ix_players_ladder_id_id", "ladder_id", "id").ddl_if(dialect="sqlite"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(128))
    name: Mapped[str | None] = mapped_column(String(200))
    initial: Mapped[bytes] = mapped_column(LargeBinary)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    games: Mapped[int] = mapped_column(default=0)
    #: What is known of the player after their latest game, in games (app.rating.experience); their number of games
    #: where the ladder's steps ignore time.
    experience: Mapped[float] = mapped_column(default=0.0, server_default="0")
    #: The variance (logits²) of the player's strength after their latest game under the variance rule
    #: (mathematics §3b); null: none yet (the ladder's start), or the ladder is on the shrinking-step rule.
    variance: Mapped[float | None]
    wins: Mapped[int] = mapped_column(default=0)
    draws: Mapped[int] = mapped_column(default=0)
    losses: Mapped[int] = mapped_column(default=0)
    comparisons: Mapped[int] = mapped_column(default=0)
    last_played_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: Inactive players leave the default leaderboard; their ratings and history stay.
    active: Mapped[bool] = mapped_column(default=True, server_default=true())
    #: Hodge strength (logits) against the field right after the player's last game; null if unknown (never
    #: played, or their games were replayed since).
    strength_then: Mapped[float | None]
    #: The ladder version that last changed the row (-1 until its transaction's version bump stamps it): a
    #: worker's copy of the ladder at version v catches up by reading the rows changed after v.
    changed_version: Mapped[int] = mapped_column(BigInteger, server_default="-1")


class PlayerAlias(Base):
    """A key that leads to another player: a merged player's key, or a changed key's old one."""

    __tablename__ = "player_aliases"

    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"), primary_key=True)
    alias: Mapped[str] = mapped_column(String(128), primary_key=True)
    player_id: Mapped[int] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Game(Base):
    __tablename__ = "games"
    __table_args__ = (
        UniqueConstraint("ladder_id", "external_id"),
        Index("ix_games_ladder_id_id", "ladder_id", "id"),
        Index("ix_games_ladder_id_seq", "ladder_id", "seq", unique=True),
    )

    #: Also the game's position in the event log: ids are allocated after the
    #: participants are locked, so games sharing a player are numbered in the
    #: order they were applied (disjoint games commute).
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"))
    #: The game's number within its ladder: 1, 2, 3, … in log order; the id the API shows and takes.
    seq: Mapped[int | None] = mapped_column(BigInteger)
    external_id: Mapped[str | None] = mapped_column(String(200))
    played_at: Mapped[datetime]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: The normalised input: sides (player keys), ranks, advantages.  With the
    #: participants' rows it is the whole game as the API shows it.
    payload: Mapped[dict] = mapped_column(JSON)
    #: A voided game stays in the log as an audit trail and counts nowhere.
    voided_at: Mapped[datetime | None]
    voided_by: Mapped[str | None] = mapped_column(String(64))
    void_reason: Mapped[str | None] = mapped_column(String(500))
    #: The game's seats just before it: {seat name: [advantage, information]}, or null if it takes none.
    seat_state: Mapped[dict | None] = mapped_column(JSON)


class Participant(Base):
    __tablename__ = "participants"
    __table_args__ = (Index("ix_participants_player_id_game_id", "player_id", "game_id"),)

    game_id: Mapped[int] = mapped_column(ForeignKey("games.id", ondelete="CASCADE"), primary_key=True)
    player_id: Mapped[int] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"), primary_key=True)
    #: Its game's ladder: the column the tables are distributed by (docs/operations.md, migration 0029).
    ladder_id: Mapped[int] = mapped_column(BigId)
    side: Mapped[int]
    before: Mapped[bytes] = mapped_column(LargeBinary)
    after: Mapped[bytes] = mapped_column(LargeBinary)
    actual_score: Mapped[float]
    expected_score: Mapped[float]
    #: The player's variance after the game under the variance rule (mathematics §3b); null under the other rule.
    variance_after: Mapped[float | None]
    #: The Elo-equivalent points the game gave or took, as its post answered (against the field just after it);
    #: null once a replay changed its vectors (then shown against today's field), and for games before migration 0042.
    elo_change: Mapped[float | None]


class IdempotencyKey(Base):
    """A client's idempotency key and the response it received, kept for ``MELO_IDEMPOTENCY_TTL_HOURS``."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (Index("ix_idempotency_keys_created_at", "created_at"),)

    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    request_hash: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int]
    response: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Refit(Base):
    """A background maximum-likelihood refit of a ladder's log (mathematics §9) and its result."""

    __tablename__ = "refits"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(16))  # queued, running, done, rejected, failed, cancelled
    progress: Mapped[float] = mapped_column(default=0.0)
    params: Mapped[dict] = mapped_column(JSON)
    result: Mapped[dict | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(String(2000))
    #: Games in the ladder's log when an auto refit was queued; from when it runs, in the log it reads.
    log_games: Mapped[int | None] = mapped_column(BigInteger)
    #: An auto refit's schedule's measure (null: before 0040): while it is queued, the comparisons at which it was
    #: due; from when it runs, those of the start of the log it reads (:func:`app.analysis.refit_run.due_part`).
    log_comparisons: Mapped[int | None] = mapped_column(BigInteger)
    #: The log the refit saw: games with id ≤ this.
    after_game_id: Mapped[int | None] = mapped_column(BigInteger)
    #: Fitted vectors: little-endian int64 player ids and float64 rows in the same order.
    player_ids: Mapped[bytes | None] = mapped_column(LargeBinary)
    vectors: Mapped[bytes | None] = mapped_column(LargeBinary)
    #: Who its identifiability check found not placed (what shows as provisional once it is applied), as
    #: sorted little-endian int64 player ids: the not comparable, and those outside the largest component.
    not_comparable_ids: Mapped[bytes | None] = mapped_column(LargeBinary)
    outside_field_ids: Mapped[bytes | None] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None]
    applied_at: Mapped[datetime | None]
    #: ``host:pid:start-time`` of the server process that queued it (its child runs it); null before 0016.
    owner: Mapped[str | None] = mapped_column(String(200))


class Checkpoint(Base):
    """Vectors that replace the ladder's ratings after game ``after_game_id`` (mathematics §9).

    Current ratings = checkpoint + the online rule over the games after it; players
    not in the checkpoint start from their initial vectors.
    """

    __tablename__ = "checkpoints"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"), index=True)
    after_game_id: Mapped[int] = mapped_column(BigInteger)
    refit_id: Mapped[int | None] = mapped_column(ForeignKey("refits.id", ondelete="SET NULL"))
    player_ids: Mapped[bytes] = mapped_column(LargeBinary)
    vectors: Mapped[bytes] = mapped_column(LargeBinary)
    #: The seats' state the refit set: {"advantage": [...], "information": [...]}, or null.
    seat_state: Mapped[dict | None] = mapped_column(JSON)
    #: The players' variances there (raw float64, in ``player_ids`` order) under the variance rule; null otherwise.
    variances: Mapped[bytes | None] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: Set when a game at or before ``after_game_id`` was voided: never replayed from again.
    superseded_at: Mapped[datetime | None]


class Season(Base):
    """A closed season of a ladder: its name and boundary in the log (the last game it counts), and when a change
    to its games (a void, a merge) came after it closed: its standings stay as they were archived."""

    __tablename__ = "seasons"
    __table_args__ = (UniqueConstraint("ladder_id", "name"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    closed_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: The last game of the log the season counts (0: none); the next season counts the games after it.
    after_game_id: Mapped[int] = mapped_column(BigInteger)
    #: The same game's number in the ladder (``seq``; 0: none), as an export names it.
    after_seq: Mapped[int] = mapped_column(BigInteger)
    #: The number of the season's first game (null: it counted none).
    first_seq: Mapped[int | None] = mapped_column(BigInteger)
    #: Games of the log in the season when it closed, and players in its standings.
    games: Mapped[int]
    players: Mapped[int]
    #: When a game of the season was voided or merged away after it closed (the archive stays as it was).
    changed_at: Mapped[datetime | None]
    #: How far the ratings were pulled back toward each player's initial vector when it closed (0: not at all, 1:
    #: afresh; mathematics §8, "Seasons").  A replay through the boundary pulls them again.
    pull: Mapped[float] = mapped_column(default=0.0, server_default="0")


class SeasonStanding(Base):
    """One row of a closed season's final standings, as they stood: its players by conservative strength, with
    their records in the season."""

    __tablename__ = "season_standings"
    __table_args__ = (Index("ix_season_standings_ladder_id", "ladder_id"),)

    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"))
    season_id: Mapped[int] = mapped_column(ForeignKey("seasons.id", ondelete="CASCADE"), primary_key=True)
    rank: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(128))
    name: Mapped[str | None] = mapped_column(String(200))
    elo: Mapped[float]
    strength_se: Mapped[float]
    conservative: Mapped[float]
    provisional: Mapped[bool]
    games: Mapped[int]
    wins: Mapped[int]
    draws: Mapped[int]
    losses: Mapped[int]


class LadderEvent(Base):
    """What changed in a ladder, in commit order: what the event stream (``GET …/events``) reads and sends.

    Written by the transaction that makes the change, after it took the
    ladder's row (:func:`app.storage.ladders.bump`): the numbers of one ladder's
    events grow in commit order, so a listener resumes after the last one it saw (the stream's event ids).
    ``data`` says which game, player or refit; the stream shows each as the API does when it sends it.
    """

    __tablename__ = "ladder_events"
    # AUTOINCREMENT: SQLite must never give an id out again, even once every event is pruned.
    __table_args__ = (
        Index("ix_ladder_events_ladder_id_number", "ladder_id", "number", unique=True),
        Index("ix_ladder_events_created_at", "created_at"),  # pruning
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"))
    #: The event's number in its ladder (1, 2, …, from ``ladders.last_event``): what the stream shows as its id.
    number: Mapped[int] = mapped_column(BigInteger, server_default="0")
    version: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(16))  # game, void, player, refit, ladder, season, access, challenge
    data: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Webhook(Base):
    """A URL a ladder's events are posted to (app.webhooks): the events it takes, the secret its deliveries are
    signed with, and where in the ladder's log it has got to."""

    __tablename__ = "webhooks"
    __table_args__ = ({"sqlite_autoincrement": True},)  # a deleted webhook's id is never another's

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(String(2000))
    #: The event names it takes: game, void, season, challenge, moment, digest.
    events: Mapped[list[str]] = mapped_column(JSON)
    #: Signs each delivery (HMAC-SHA256); shown once, when the webhook is made, and kept to sign with.
    secret: Mapped[str] = mapped_column(String(100))
    #: The number of the ladder's last event (``ladder_events.number``) handled: a delivery made of it, or skipped.
    cursor: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    #: Its latest delivery failed after every attempt; the next that succeeds clears it.
    failing: Mapped[bool] = mapped_column(default=False, server_default=false())
    #: When its pending delivery (if any) is tried next; null: none is pending.
    retry_at: Mapped[datetime | None]
    #: When the next weekly digest is due (webhooks that take ``digest``).
    digest_at: Mapped[datetime | None]
    #: Which server process works on it, until when: a worker claims it by a conditional update, so two never
    #: deliver the same event.
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    lease_until: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class WebhookDelivery(Base):
    """One event sent (or being sent) to a webhook: the exact body, and how its attempts went."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_webhook_id_id", "webhook_id", "id"),
        Index("ix_webhook_deliveries_created_at", "created_at"),  # pruning
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"))
    webhook_id: Mapped[int] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    event: Mapped[str] = mapped_column(String(16))
    #: The ladder event it carries (null: a digest).
    event_number: Mapped[int | None] = mapped_column(BigInteger)
    #: pending, delivered or failed.
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(default=0)
    #: The body sent, byte for byte the same at every attempt (JSON).
    body: Mapped[str] = mapped_column(String)
    response_code: Mapped[int | None]
    error: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    attempted_at: Mapped[datetime | None]
    delivered_at: Mapped[datetime | None]


class SlackCommand(Base):
    """A ladder's Slack slash command: the signing secret Slack signs its requests with (never shown back)."""

    __tablename__ = "slack_commands"

    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"), primary_key=True)
    signing_secret: Mapped[str] = mapped_column(String(200))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class SlackRequest(Base):
    """The signatures of a ladder's recent slash-command requests: the same one again within five minutes is a
    replay, and refused."""

    __tablename__ = "slack_requests"
    __table_args__ = (Index("ix_slack_requests_seen_at", "seen_at"),)

    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"), primary_key=True)
    signature: Mapped[str] = mapped_column(String(80), primary_key=True)
    seen_at: Mapped[datetime] = mapped_column(default=utcnow)


class Challenge(Base):
    """A challenge between two players of a ladder: who challenged whom, its answer, and the game that settled it.

    Numbered within its ladder (``number``: the API's ``id``), as games are.  The players are named by id, so a
    rename or an erasure shows at once; a merge moves them (:func:`app.storage.challenges.merge`).  An open or
    accepted challenge whose ``expires_at`` has passed is expired, whether or not a write has marked it yet.
    """

    __tablename__ = "challenges"
    __table_args__ = (Index("ix_challenges_ladder_id_status", "ladder_id", "status"),)

    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"), primary_key=True)
    number: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    from_player_id: Mapped[int] = mapped_column(BigInteger)
    to_player_id: Mapped[int] = mapped_column(BigInteger)
    message: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16))  # open, accepted, declined, withdrawn, played, expired
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    #: When it was last answered (accepted, declined, withdrawn, played, marked expired); null: not yet.
    answered_at: Mapped[datetime | None]
    #: The number of the game that settled it (``played``).
    game: Mapped[int | None] = mapped_column(BigInteger)
    #: Why the server withdrew it, where it did (a merge): ``duplicate`` or ``same_player``; null otherwise.
    reason: Mapped[str | None] = mapped_column(String(32))
