"""The client for threads and plain scripts: :class:`Melo`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

import httpx

from melo_client import _api
from melo_client._api import Page
from melo_client._calls import STREAM_SILENCE, Call, EventReader, Retry, SideLike, Team, batches, game
from melo_client.models import (
    Checkpoint,
    Event,
    Game,
    Ladder,
    LadderCreated,
    LeaderboardEntry,
    MatchPrediction,
    Opponent,
    PairPrediction,
    Player,
    PostedGames,
    Refit,
    Teams,
)

T = TypeVar("T")


class Melo:
    """A connection to a mElo rating service.

    ``key`` is sent as the bearer token (a ladder's write or admin key; none is needed to read a public
    ladder).  ``ladder`` binds a default ladder: every method also takes ``ladder=`` for another one.
    ``timeout`` is in seconds (or an ``httpx.Timeout``); ``retry`` says how failed requests are tried again.
    Use it as a context manager, or call :meth:`close`."""

    def __init__(
        self,
        base_url: str,
        key: str | None = None,
        ladder: str | None = None,
        *,
        timeout: float | httpx.Timeout = 10.0,
        retry: Retry | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout, transport=transport)
        self.ladder = ladder
        self.retry = retry or Retry()
        self.ladders = Ladders(self)
        self.games = Games(self)
        self.players = Players(self)
        self.refits = Refits(self)

    def __enter__(self) -> Melo:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def run(self, call: Call[T]) -> T:
        """Send a call, trying again as :class:`Retry` says; its answer, or the problem raised."""
        attempt, failed = 0, 0.0
        while True:
            try:
                response = self.http.request(call.method, call.path, **call.request())
            except httpx.TransportError as error:
                failed = time.monotonic() if attempt == 0 else failed  # the retries' clock starts
                wait = call.after_error(error, attempt, self.retry, failed)
            else:
                failed = time.monotonic() if attempt == 0 else failed
                answer, wait = call.answer(response, attempt, self.retry, failed)
                if not wait:
                    return answer  # type: ignore[return-value]
            time.sleep(wait)
            attempt += 1

    def pages(self, page: Callable[[str | None], Call[Page[T]]]) -> Iterator[T]:
        """Every item of a list, a page at a time as you iterate: ``page(cursor)`` is the call for one page."""
        cursor = None
        while True:
            answer = self.run(page(cursor))
            yield from answer.items
            if not (cursor := answer.next_cursor):
                return

    def slug(self, ladder: str | None) -> str:
        slug = ladder or self.ladder
        if slug is None:
            raise ValueError("no ladder: give ladder=, or bind one with Melo(..., ladder=...)")
        return slug

    def events(self, *, after: int | None = None, ladder: str | None = None) -> Iterator[Event]:
        """The ladder's changes as they commit (:class:`Event`: games, voids, player changes, applied refits), for
        as long as you iterate: a game server's or a scoreboard's live feed.

        Starts now, or after event id ``after``.  A dropped connection, a server restart or a 503 is met by
        reconnecting (as :class:`Retry` says) after the last event seen, so no event is missed or seen twice;
        only an error no retry can mend (a wrong key, no such ladder) is raised.  Stop by leaving the loop."""
        slug, last, attempt, failed = self.slug(ladder), after, 0, 0.0
        timeout = httpx.Timeout(self.http.timeout.connect, read=STREAM_SILENCE)
        while True:
            call = _api.events(slug, last)
            try:
                with self.http.stream(call.method, call.path, **call.request(), timeout=timeout) as response:
                    if response.status_code != 200:
                        response.read()
                        failed = time.monotonic() if attempt == 0 else failed  # the first failure in a row
                        wait = call.answer(response, attempt, self.retry, failed)[1]  # raises what no retry mends
                    else:
                        attempt, reader = 0, EventReader()
                        for line in response.iter_lines():
                            if (event := reader.line(line)) is not None:
                                last = event.id if event.id is not None else last
                                yield event
                        attempt, wait = -1, self.retry.wait(0, None)  # the server closed it (it is stopping)
            except httpx.TransportError as error:
                failed = time.monotonic() if attempt == 0 else failed
                wait = call.after_error(error, attempt, self.retry, failed)
            time.sleep(wait)
            attempt += 1

    def predict(
        self, a: str, b: str, *, a_seat: str | None = None, b_seat: str | None = None, ladder: str | None = None
    ) -> PairPrediction:
        """P(a beats b) (each in a seat, if the ladder has seats). A key that names no player yet stands for a
        newcomer (``a_known``/``b_known`` false)."""
        return self.run(_api.predict(self.slug(ladder), a, b, a_seat, b_seat))

    def predict_match(
        self, sides: Iterable[SideLike | str | Sequence[str]], *, ladder: str | None = None
    ) -> MatchPrediction:
        """Win probabilities between N sides: each a player key, a list of keys (a team) or a :class:`Side`."""
        return self.run(_api.predict_match(self.slug(ladder), sides))

    def leaderboard(
        self,
        *,
        by: str | None = None,
        inactive: bool | None = None,
        page_size: int = 100,
        ladder: str | None = None,
        min_version: int | None = None,
    ) -> Iterator[LeaderboardEntry]:
        """Every entry of the leaderboard in order, a page at a time as you iterate; with ``min_version`` (a
        posted game's ``ladder_version``), never older than that version."""
        slug = self.slug(ladder)
        return self.pages(lambda cursor: _api.leaderboard_page(slug, by, inactive, page_size, cursor, min_version))

    def around(
        self,
        player: str,
        *,
        by: str | None = None,
        inactive: bool | None = None,
        limit: int = 11,
        ladder: str | None = None,
        min_version: int | None = None,
    ) -> list[LeaderboardEntry]:
        """The ``limit`` leaderboard entries centred on ``player`` (fewer at the ends), with their ranks."""
        call = _api.around(self.slug(ladder), player, by, inactive, limit, min_version)
        return self.run(call)

    def teams(
        self, players: Sequence[str], n: int = 2, *, sizes: Sequence[int] | None = None, ladder: str | None = None
    ) -> Teams:
        """Split ``players`` into ``n`` teams whose match is closest to even."""
        return self.run(_api.teams(self.slug(ladder), players, n, sizes))

    def opponents(
        self, player: str, *, limit: int = 10, purpose: str | None = None, ladder: str | None = None
    ) -> list[Opponent]:
        """The best opponents for ``player`` (``purpose``: as the API's ``purpose`` parameter)."""
        return self.run(_api.opponents(self.slug(ladder), player, limit, purpose))


class _Part:
    def __init__(self, melo: Melo) -> None:
        self.melo = melo


class Ladders(_Part):
    def create(self, slug: str, **settings: Any) -> LadderCreated:
        """Create a ladder (the server's admin key); ``settings`` as the API takes them (``k``, ``seats``, …)."""
        return self.melo.run(_api.create_ladder(slug, settings))

    def get(self, ladder: str | None = None) -> Ladder:
        return self.melo.run(_api.get_ladder(self.melo.slug(ladder)))

    def list(self, page_size: int = 100) -> Iterator[Ladder]:
        """Every ladder the key may see."""
        return self.melo.pages(lambda cursor: _api.ladders_page(page_size, cursor))


class Games(_Part):
    def post(
        self,
        winner: Team | None = None,
        loser: Team | None = None,
        *,
        sides: Iterable[SideLike] | None = None,
        draw: bool = False,
        played_at: datetime | str | None = None,
        external_id: str | None = None,
        ladder: str | None = None,
    ) -> Game:
        """Record a game: ``winner`` beat ``loser`` (each a player key or a list of keys, a team; ``draw=True``
        for a tie), or any form the API takes as ``sides`` (free-for-all, ranks or scores, seats, advantages).

        Sent under an ``Idempotency-Key`` of its own and tried again on failures with the same key: it counts
        once however many tries it took."""
        body = game(winner, loser, sides=sides, draw=draw, played_at=played_at, external_id=external_id)
        return self.melo.run(_api.post_game(self.melo.slug(ladder), body))

    def post_many(
        self,
        games: Iterable[dict[str, Any]],
        *,
        batch_size: int = 1_000,
        max_appearances: int = 20_000,
        ladder: str | None = None,
    ) -> PostedGames:
        """Record games in order through the batch endpoint: each batch is applied whole or not at all (and under an
        ``Idempotency-Key`` of its own); the games recorded, each read as a :class:`Game` when first looked at.
        Each game is a dict as :func:`melo_client.game` makes
        (``game(winner="ann", loser="bob")``) or the API takes (``{"sides": …}``)."""
        slug = self.melo.slug(ladder)
        out = PostedGames()
        for batch in batches(list(games), batch_size, max_appearances):
            posted = self.melo.run(_api.post_games(slug, batch))
            out += posted
        return out

    def void(self, number: int, reason: str | None = None, *, ladder: str | None = None) -> Game:
        """Void game ``number``: it stays in the log and counts nowhere; the ratings are replayed without it."""
        return self.melo.run(_api.void_game(self.melo.slug(ladder), number, reason))

    def get(self, number: int, *, ladder: str | None = None) -> Game:
        return self.melo.run(_api.get_game(self.melo.slug(ladder), number))

    def list(self, *, page_size: int = 100, ladder: str | None = None) -> Iterator[Game]:
        """Every game of the ladder, newest first."""
        slug = self.melo.slug(ladder)
        return self.melo.pages(lambda cursor: _api.games_page(slug, page_size, cursor))


class Players(_Part):
    def get(self, key: str, *, ladder: str | None = None, min_version: int | None = None) -> Player:
        """The player's profile; with ``min_version`` (a posted game's ``ladder_version``), never older."""
        return self.melo.run(_api.get_player(self.melo.slug(ladder), key, min_version))

    def create(self, key: str, name: str | None = None, *, ladder: str | None = None) -> Player:
        return self.melo.run(_api.create_player(self.melo.slug(ladder), key, name))

    def rename(self, key: str, to: str | None = None, *, name: str | None = None, ladder: str | None = None) -> Player:
        """Give the player a new key ``to`` (the old one stays as an alias) and/or a display ``name``."""
        changes = {field: value for field, value in (("key", to), ("name", name)) if value is not None}
        return self.melo.run(_api.change_player(self.melo.slug(ladder), key, changes))

    def merge(self, key: str, into: str, *, ladder: str | None = None) -> Player:
        """The same person played as ``key`` and ``into``: one player from now on, the log replayed."""
        return self.melo.run(_api.merge_player(self.melo.slug(ladder), key, into))


class Refits(_Part):
    def run(
        self,
        *,
        wait: bool = True,
        poll: float = 1.0,
        timeout: float | None = None,
        ladder: str | None = None,
        **params: Any,
    ) -> Refit:
        """Start a maximum-likelihood refit of the ladder (``params`` as the API takes them); with ``wait``,
        poll it until it is over (``timeout`` seconds at most) and return it finished."""
        slug = self.melo.slug(ladder)
        job = self.melo.run(_api.start_refit(slug, params))
        deadline = None if timeout is None else time.monotonic() + timeout
        while wait and job.status not in _api.FINISHED:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"refit {job.id} still {job.status} after {timeout} s")
            time.sleep(poll)
            job = self.melo.run(_api.get_refit(slug, job.id))
        return job

    def get(self, refit_id: int, *, ladder: str | None = None) -> Refit:
        return self.melo.run(_api.get_refit(self.melo.slug(ladder), refit_id))

    def apply(self, refit_id: int, *, ladder: str | None = None) -> Checkpoint:
        """Apply a finished refit as a checkpoint."""
        return self.melo.run(_api.apply_refit(self.melo.slug(ladder), refit_id))
