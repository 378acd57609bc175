"""Export a ladder as NDJSON, and restore such an export into a new ladder.

An export is everything the ratings are made of: the ladder's settings and
seed, its players (with their initial vector when it is not the seeded one),
its games in log order, voided ones with their void marks, and the
checkpoints of applied refits at their place in the log; players come with their aliases.  Restoring it
replays the same log from the same start, so every vector comes back bit for
bit.  Keys, idempotency records and refit reports are not exported.

It is written page by page from one snapshot, so memory stays bounded
however long the log is.  Restoring is one transaction: a bad line stops it
with its number, and nothing is changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np
from pydantic import ValidationError
from sqlalchemy.orm import Session

from app import rating, storage
from app.backups.schemas import FORMAT, LINES, ExportedCheckpoint, ExportedGame, ExportedPlayer, ExportedSeason, Header
from app.core.errors import InvalidInput
from app.core.ladder import LadderRow, fold
from app.core.schemas import StrictModel, iso
from app.domain.access import ladder_for_read
from app.games.apply import Voided, import_games
from app.ladders.schemas import MAX_ETA, LadderCreate, LadderCreated
from app.ladders.service import create_ladder, ladder_out

#: Rows read per query while exporting, and games applied per step while restoring.
PAGE = 5_000
CHUNK = 50_000
#: Unknown players named in the error of a game that names them.
MISSING_NAMED = 10

Progress = Callable[[str, int, int], None] | None
T = TypeVar("T", bound=StrictModel)


def _line(value: dict) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def export_lines(session: Session, ladder: LadderRow) -> Iterator[bytes]:
    """The export, a page of lines at a time (read in the caller's snapshot)."""
    settings = {name: getattr(ladder, name) for name in LadderCreate.model_fields} | {"private": ladder.private}
    players, games = storage.ladders.counted_sizes(session, ladder.id, voided=True)
    yield _line({"melo_export": FORMAT, "ladder": settings, "players": players, "games": games})
    after = 0
    while page := storage.players.export_page(session, ladder.id, after, PAGE):
        keys = [row[1] for row in page]
        seeded = rating.initial_vectors(keys, ladder.k, ladder.seed, ladder.init_scale, ladder.init_offset)
        aliases = storage.aliases.of_players(session, ladder.id, [row[0] for row in page])
        lines = []
        for (player_id, key, name, active, initial, created), own in zip(
            page, storage.codec.pack_rows(seeded), strict=True
        ):
            player = {"key": key, "name": name, "active": active, "created_at": iso(created)}
            if player_id in aliases:
                player["aliases"] = aliases[player_id]
            if initial != own:
                player["initial"] = storage.codec.unpack(initial).tolist()
            lines.append(_line({"player": player}))
        yield b"".join(lines)
        after = page[-1][0]
    checkpoints = storage.refits.replayed_checkpoints(session, ladder.id)
    pulls = storage.seasons.pulls_by_boundary(session, ladder.id)  # the seasons' pulls, by the game they follow
    dim = 2 * ladder.k
    after, seq = 0, 0
    while True:
        page = storage.games.export_page(session, ladder.id, after, PAGE)
        posted = storage.games.posted_changes(session, ladder.id, page[0][0], page[-1][0]) if page else {}
        lines = []
        for game_id, game_seq, external_id, played_at, payload, voided_at, voided_by, reason in page:
            while checkpoints and checkpoints[0].after_game_id < game_id:
                lines.append(_checkpoint_line(session, checkpoints.pop(0), seq, dim, pulls))
            game = {"seq": game_seq, "played_at": iso(played_at), "sides": _sides(payload)}
            if "match" in payload:
                game["match"] = payload["match"]
            if external_id is not None:
                game["external_id"] = external_id
            if voided_at is not None:
                game["voided"] = {"at": iso(voided_at), "by": voided_by, "reason": reason}
            if game_id in posted:
                game["elo_changes"] = [[posted[game_id].get(key) for key in side] for side in payload["sides"]]
            lines.append(_line({"game": game}))
            seq = game_seq
        if not page:
            lines += [_checkpoint_line(session, checkpoint, seq, dim, pulls) for checkpoint in checkpoints]
        yield b"".join(lines)
        if not page:
            for season in storage.seasons.page_of_seasons(session, ladder.id, None, None)[::-1]:
                yield _season_line(session, season)  # one at a time: memory follows the largest season
            return
        after = page[-1][0]


def _sides(payload: dict) -> list[dict]:
    """A stored game's sides as a game is posted: players, rank and score (a match's sides have neither: its games
    say them), and the seat advantage in logits and the learned seat if any."""
    if "match" in payload:
        sides = [{"players": players} for players in payload["sides"]]
    else:
        scores = payload.get("scores") or [None] * len(payload["sides"])
        sides = [
            {"players": players, "rank": rank} | ({"score": score} if score is not None else {})
            for players, rank, score in zip(payload["sides"], payload["ranks"], scores, strict=True)
        ]
    if payload["advantages"] is not None:
        for side, advantage in zip(sides, payload["advantages"], strict=True):
            side["advantage"] = advantage
    for side, seat in zip(sides, payload.get("seats") or [], strict=False):
        if seat is not None:
            side["seat"] = seat
    return sides


def _season_line(session: Session, season) -> bytes:
    standings = storage.seasons.standings(session, season.ladder_id, season.id, 0, None)
    line = {
        "name": season.name,
        "closed_at": iso(season.closed_at),
        "after_seq": season.after_seq,
        "first_seq": season.first_seq,
        "games": season.games,
        "changed_at": iso(season.changed_at) if season.changed_at else None,
        "pull": season.pull,
        "standings": [dict(zip(storage.seasons.STANDING, row, strict=True)) for row in standings],
    }
    return _line({"season": line})


def _checkpoint_line(session: Session, checkpoint, seq: int, dim: int, pulls: dict[int, list[float]]) -> bytes:
    ids = storage.codec.unpack_ids(checkpoint.player_ids)
    vectors = storage.codec.unpack_matrix(checkpoint.vectors, dim)
    keys = storage.players.keys_of(session, checkpoint.ladder_id, ids.tolist())
    held = {
        keys[player_id]: vector
        for player_id, vector in zip(ids.tolist(), vectors.tolist(), strict=True)
        if player_id in keys
    }
    line = {"after_seq": seq, "vectors": held}
    if checkpoint.variances is not None:  # under the variance rule (mathematics §3b): none yet is left out
        kept = storage.codec.unpack(checkpoint.variances)
        line["variances"] = {
            keys[player_id]: v
            for player_id, v in zip(ids.tolist(), kept.tolist(), strict=True)
            if player_id in keys and v == v
        }
    if checkpoint.seat_state is not None:
        line["seats"] = checkpoint.seat_state
    if checkpoint.after_game_id in pulls:  # seasons that pulled the ratings back here (the vectors are pulled)
        line["pulls"] = pulls[checkpoint.after_game_id]
    return _line({"checkpoint": line})


def restore(
    session: Session, lines: Iterable[bytes], slug: str | None = None, progress: Progress = None
) -> LadderCreated:
    """Create a ladder from an export (as ``slug``, or the slug it was exported with) and replay its log.

    Every line is checked before it is used; the first bad one raises
    :class:`InvalidInput` naming its number and field, and the caller rolls the
    transaction back.  ``progress(stage, done, total)`` follows the games.
    """
    numbered = ((n, line) for n, line in enumerate(lines, start=1) if line.strip())
    first = next(numbered, None)
    if first is None:
        raise InvalidInput("the export is empty", errors=[{"field": "line 1"}])
    header = _parse(first[0], _decode(*first), Header)
    settings = header.ladder.model_dump(exclude={"private"}) | ({"slug": slug} if slug else {})
    eta = settings["eta"]  # above the API's bound only where an old rate choice set it (ExportedLadder)
    created = create_ladder(session, LadderCreate(**settings | {"eta": min(eta, MAX_ETA)}))
    ladder = ladder_for_read(session, created.slug, fresh=True)
    if header.ladder.private or eta > MAX_ETA:
        storage.ladders.change(session, ladder.id, {"private": header.ladder.private, "eta": eta})
        ladder = ladder_for_read(session, created.slug, fresh=True)
    Restore(session, ladder, header, progress).run(numbered)
    restored = ladder_out(session, ladder_for_read(session, created.slug, fresh=True))  # its players and games now
    return LadderCreated(**restored.model_dump(), admin_key=created.admin_key, write_key=created.write_key)


def _decode(n: int, raw: bytes) -> object:
    """The JSON value of line ``n``; any line that is not one (bad syntax or UTF-8, nested past what the parser
    can follow) stops the restore with its number."""
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise _bad(n, "line", f"not JSON ({exc})") from None
    except RecursionError:
        raise _bad(n, "line", "not JSON this restore reads: nested too deep") from None


def _parse(n: int, value: object, model: type[T]) -> T:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]).lstrip(".")
        raise _bad(n, where or "line", first["msg"]) from None


def _bad(n: int, field: str, message: str) -> InvalidInput:
    return InvalidInput(
        f"line {n}: {field}: {message}; nothing was restored",
        errors=[{"field": f"line {n}: {field}", "message": message}],
    )


class Restore:
    """The state of a restore as it reads the export's lines after the header."""

    def __init__(self, session: Session, ladder: LadderRow, header: Header, progress: Progress) -> None:
        self.session, self.ladder, self.header, self.progress = session, ladder, header, progress
        self.total = header.games
        self.players: list[ExportedPlayer] = []
        self.known: set[str] = set()
        self.aliases: set[str] = set()
        self.inactive: list[str] = []
        self.external_ids: set[str] = set()
        self.pending: list[ExportedGame] = []
        self.seasons: list[tuple[int, ExportedSeason]] = []
        self.pulls: dict[int, list[float]] = {}  # the seasons' pulls the checkpoints name, by the seq they follow
        self.seq = 0
        self.last_game_id = 0
        self.games_done = 0

    def run(self, numbered: Iterator[tuple[int, bytes]]) -> None:
        if self.progress is not None:
            self.progress("games", 0, self.total or 0)
        for n, raw in numbered:
            value = _decode(n, raw)
            kind = next(iter(value), None) if isinstance(value, dict) and len(value) == 1 else None
            if kind not in LINES:
                raise _bad(n, "line", f"expected one of {', '.join(map(repr, LINES))} as the only key")
            line: Any = _parse(n, value, LINES[kind])  # the model of its kind
            if kind == "player":
                self.player(n, line.player)
            elif kind == "game":
                self.game(n, line.game)
            elif kind == "checkpoint":
                self.checkpoint(n, line.checkpoint)
            else:
                self.season(n, line.season)
        self.flush()
        self._add_seasons()
        self._check_counts()
        # Their games made them active again, as any game does: they were inactive after them.
        storage.players.deactivate(self.session, self.ladder.id, self.inactive)
        storage.ladders.bump(self.session, [self.ladder.id])  # the players' count, if no game came after them

    def _check_counts(self) -> None:
        """The header's counts, when it gives them, are what the file held: an export cut short at the end of a
        line would otherwise restore the start of the log as if it were all of it."""
        for what, expected, found in (
            ("players", self.header.players, len(self.known)),
            ("games", self.total, self.seq),
        ):
            if expected is not None and found != expected:
                raise _bad(1, what, f"the header counts {expected} {what}, the file holds {found} (is it cut short?)")

    def player(self, n: int, player: ExportedPlayer) -> None:
        if self.seq:
            raise _bad(n, "player", "players come before the games")
        if player.key in self.known or player.key in self.aliases:
            raise _bad(n, "player.key", f"player {player.key!r} appears twice")
        if self.ladder.case_insensitive_keys:
            for m, key in enumerate([player.key, *player.aliases]):
                if fold(key) != key:
                    field = "player.key" if m == 0 else f"player.aliases[{m - 1}]"
                    raise _bad(n, field, f"{key!r} is not case-folded, as this ladder's keys are")
        for m, alias in enumerate(player.aliases):
            if alias in self.known or alias in self.aliases or alias == player.key:
                raise _bad(n, f"player.aliases[{m}]", f"{alias!r} is a key or an alias already")
            self.aliases.add(alias)
        if player.initial is not None and len(player.initial) != 2 * self.ladder.k:
            raise _bad(n, "player.initial", f"expected 2k = {2 * self.ladder.k} numbers")
        self.known.add(player.key)
        self.players.append(player)
        if not player.active:
            self.inactive.append(player.key)

    def game(self, n: int, game: ExportedGame) -> None:
        self._create_players()
        if game.seq is not None and game.seq != self.seq + 1:
            raise _bad(n, "game.seq", f"expected {self.seq + 1}: games come in log order")
        if game.external_id is not None:
            if game.external_id in self.external_ids:
                raise _bad(n, "game.external_id", f"external_id {game.external_id!r} appears twice")
            self.external_ids.add(game.external_id)
        # An export has a line for every player its games name (even erased ones, under their pseudonym; merged
        # ones are gone from the games too): a game naming another is not from an export, or was edited.
        missing = [
            (s, m, key)
            for s, side in enumerate(game.sides)
            for m, key in enumerate(side.players)
            if key not in self.known
        ]
        if missing:
            s, m, _ = missing[0]
            names = ", ".join(repr(key) for _, _, key in missing[:MISSING_NAMED])
            more = f" and {len(missing) - MISSING_NAMED} more" if len(missing) > MISSING_NAMED else ""
            raise _bad(n, f"game.sides[{s}].players[{m}]", f"no player line for {names}{more}")
        self.seq += 1
        if game.voided is not None:
            self.flush()
            mark = game.voided
            self._import([game], Voided(mark.at, mark.by, mark.reason))
        else:
            self.pending.append(game)
            if len(self.pending) >= CHUNK:
                self.flush()

    def checkpoint(self, n: int, checkpoint: ExportedCheckpoint) -> None:
        self._create_players()
        if checkpoint.after_seq != self.seq:
            raise _bad(n, "checkpoint.after_seq", f"expected {self.seq}: the seq of the game before it")
        dim = 2 * self.ladder.k
        for key, vector in checkpoint.vectors.items():
            if key not in self.known:
                raise _bad(n, "checkpoint.vectors", f"unknown player {key!r}")
            if len(vector) != dim:
                raise _bad(n, f"checkpoint.vectors.{key}", f"expected 2k = {dim} numbers")
        self.flush()
        # As a replay from it starts: its vectors for the players it holds, the initial ones for the others.
        ids, keys, C = storage.players.initial_rows(self.session, self.ladder.id, dim)
        row = {key: r for r, key in enumerate(keys)}
        held = [row[key] for key in checkpoint.vectors]
        C[held] = np.array(list(checkpoint.vectors.values()), dtype=np.float64).reshape(-1, dim)
        for key in checkpoint.variances or {}:
            if key not in checkpoint.vectors:
                raise _bad(n, "checkpoint.variances", f"{key!r} has no vector in the checkpoint")
        experience = variance = None
        if checkpoint.pulls:  # as each season's pull left it (mathematics §8, "Seasons")
            self.pulls[self.seq] = list(checkpoint.pulls)
            experience = storage.players.experience_of(self.session, self.ladder.id)
            for pull in checkpoint.pulls:
                experience = rating.pull_experience(experience, pull)
        if self.ladder.variance_rule:  # the variances it kept, none yet for everyone else (mathematics §3b)
            variance = np.full(len(ids), np.nan)
            for key, v in (checkpoint.variances or {}).items():
                variance[row[key]] = v
            experience = None
        storage.players.save_vectors(self.session, self.ladder.id, ids, C, experience, variance)
        storage.ladder_state.forget_field(self.session, self.ladder.id)
        order = np.argsort(ids[held], kind="stable")
        player_ids = storage.codec.pack_ids(ids[held][order])
        vectors = storage.codec.pack_rows(C[held][order].reshape(1, -1))[0] if held else b""
        seats = None
        if self.ladder.seats:
            count = len(self.ladder.seats)
            given = checkpoint.seats
            if given is None or len(given.advantage) != count or len(given.information) != count:
                raise _bad(n, "checkpoint.seats", f"expected the state of the ladder's {count} seats")
            seats = given.model_dump()
            storage.ladder_state.save_seat_state(self.session, self.ladder.id, rating.Seats.of(**seats))
        kept = None if variance is None else variance[held][order]
        storage.refits.insert_checkpoint(
            self.session, self.ladder.id, self.last_game_id, player_ids, vectors, None, seats, kept
        )

    def season(self, n: int, season: ExportedSeason) -> None:
        """A closed season, kept until the games it names are in."""
        if season.name in {s.name for _, s in self.seasons}:
            raise _bad(n, "season.name", f"season {season.name!r} appears twice")
        if self.seasons and season.after_seq < self.seasons[-1][1].after_seq:
            raise _bad(n, "season.after_seq", "seasons come in the order they closed: their ends never go back")
        if (season.first_seq is None) != (season.games == 0) or (season.first_seq or 0) > season.after_seq:
            raise _bad(
                n, "season.first_seq", "a season's first game is at or before its last, and only if it has games"
            )
        ranks = [row.rank for row in season.standings]
        if ranks != list(range(1, len(ranks) + 1)):
            raise _bad(n, "season.standings", "ranks must be 1, 2, 3, … in order")
        self.seasons.append((n, season))

    def _add_seasons(self) -> None:
        """The closed seasons, their boundaries found by the seq of their last game, in the order they closed.
        A season's pull must be on the checkpoint where it closed (its vectors pulled), and only there."""
        pulled: dict[int, list[float]] = {}
        for n, season in self.seasons:
            if season.after_seq > self.seq:
                raise _bad(n, "season.after_seq", f"the log has {self.seq} games, not {season.after_seq}")
            if season.pull > 0:
                pulled.setdefault(season.after_seq, []).append(season.pull)
                if self.pulls.get(season.after_seq, [])[: len(pulled[season.after_seq])] != pulled[season.after_seq]:
                    raise _bad(n, "season.pull", f"no checkpoint after game {season.after_seq} names this pull")
        for seq, pulls in self.pulls.items():
            if pulled.get(seq) != pulls:
                raise _bad(1, "checkpoint.pulls", f"the pulls after game {seq} are not those of its seasons")
        for _, season in self.seasons:
            after = storage.seasons.game_of_seq(self.session, self.ladder.id, season.after_seq)
            values = season.model_dump(exclude={"standings"}) | {
                "after_game_id": after,
                "players": len(season.standings),
            }
            rows = [tuple(getattr(row, name) for name in storage.seasons.STANDING) for row in season.standings]
            storage.seasons.add(self.session, self.ladder.id, values, rows)

    def flush(self) -> None:
        self._create_players()
        if self.pending:
            games, self.pending = self.pending, []
            self._import(games, None)

    def _import(self, games: list[ExportedGame], voided: Voided | None) -> None:
        self.last_game_id = import_games(self.session, self.ladder, games, voided=voided)[-1]
        self.games_done += len(games)
        if self.progress is not None:
            self.progress("games", self.games_done, max(self.total or 0, self.games_done))

    def _create_players(self) -> None:
        if not self.players:
            return
        players, self.players = self.players, []
        ladder = self.ladder
        keys = [p.key for p in players]
        C0 = rating.initial_vectors(keys, ladder.k, ladder.seed, ladder.init_scale, ladder.init_offset)
        for row, player in enumerate(players):
            if player.initial is not None:
                C0[row] = player.initial
        now = datetime.now(UTC)
        created = storage.players.create(
            self.session,
            ladder.id,
            keys,
            C0,
            [p.name for p in players],
            [p.active for p in players],
            [p.created_at or now for p in players],
        )
        storage.ladders.add_counts(self.session, ladder.id, players=created)
        storage.ladder_state.forget_field(self.session, ladder.id)
        for player in players:
            if player.aliases:
                found = storage.players.get_row(self.session, ladder.id, player.key)
                assert found is not None  # created above
                storage.aliases.add(self.session, ladder.id, player.aliases, found[0])
