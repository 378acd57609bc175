"""A group of posted requests applied in one transaction, each post with its own outcome (group commit)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
from sqlalchemy.orm import Session

from app import storage
from app.core.errors import Conflict, Problem
from app.core.ladder import LadderRow
from app.domain.access import Caller, authorize, ladder_for_read
from app.games.apply import Applied, finish, initial_vectors, replay, write
from app.games.intake import (
    Post,
    Replayed,
    key_reused,
    recorded_answer,
)
from app.games.rules import check_post
from app.games.schemas import GameIn


@dataclass
class Group:
    """What a group of posts came to: one outcome per post, and the games applied per ladder (and, on a ladder that
    refits itself, the pairs of sides they compare, where they count: what its auto refit's policy counts)."""

    outcomes: list[dict | Problem]
    applied: dict[int, int] = field(default_factory=dict)
    compared: dict[int, int] = field(default_factory=dict)
    #: Per ladder: the version this group's commit makes, and the player rows it wrote.
    versions: dict[int, int] = field(default_factory=dict)
    written: dict[int, storage.players.Written] = field(default_factory=dict)
    #: Per ladder: each game applied, by number, as its post is answered (what the event stream sends).
    shown: dict[int, dict[int, dict]] = field(default_factory=dict)
    #: The ladder of each post applied (by its place in ``outcomes``).
    ladder_of: dict[int, int] = field(default_factory=dict)

    def answered(self) -> list[dict | Problem]:
        """The outcomes, each post applied by this commit as :class:`Committed`, naming the version it made."""
        out = list(self.outcomes)
        for n, ladder_id in self.ladder_of.items():
            body = out[n]
            assert not isinstance(body, Problem)  # a post this commit applied: answered with its games
            out[n] = Committed(body, self.versions[ladder_id])
        return out


class Committed(dict):
    """A post's answer as its commit made it; ``ladder_version``: the ladder version that commit made (a read
    naming it as ``min_version`` sees the game, wherever it is served)."""

    def __init__(self, body: dict, ladder_version: int) -> None:
        super().__init__(body)
        self.ladder_version = ladder_version


def apply_posts(session: Session, posts: Sequence[Post]) -> Group:
    """Apply every valid post, in order, inside the caller's transaction.

    Each post is checked on its own (ladder, key, idempotency record,
    external ids, unknown players): a post that fails gets its own problem
    and changes nothing, and the others are applied.  Then each ladder's
    posts are applied together: one lock of all their participants, one
    replay, one insert per table.  An unexpected error raises, and the caller
    retries the posts one by one.
    """
    checked = _check(session, posts)
    group = Group(checked.outcomes)  # type: ignore[arg-type]
    locks, replaying, stamped = _lock(session, posts, checked)
    # Every ladder's games replayed together (those at one rate and k in one replay: their players are apart).
    rated = replay(session, replaying)
    # Every ladder's game numbers in one statement, its row locked until the commit: after the players' rows and
    # the replays, so the ladders' rows are held for the writes alone (a ladder whose games take seats took its
    # numbers before the replay, to read the seats under the lock).
    numbered = [
        (ladder, len(games)) for r in rated if r.taken is None for ladder, games in zip(r.ladders, r.games, strict=True)
    ]
    taken = storage.ladders.take_seqs_of(session, numbered) if numbered else {}
    taken.update((r.ladders[0].id, r.taken) for r in rated if r.taken is not None)
    written = [applied for r in rated for applied in finish(session, r, taken)]
    records = _answer(session, posts, checked, group, written)
    if written:
        write(session, written)
    storage.idempotency.remember(session, records, datetime.now(UTC))
    outcomes = checked.outcomes
    for n, first in checked.same_as.items():
        outcome = outcomes[first]
        assert outcome is not None  # the first post of the key: applied, replayed or failed above
        outcomes[n] = outcome if isinstance(outcome, Problem) else Replayed(outcome)
    # The players' rows were written with their ladder's new version (storage.players.save): none left to stamp.
    changes = {
        a.new.ladder_id: storage.ladders.Change(
            a.created, a.counted, a.field, [("game", {"game": seq}) for seq in a.seqs]
        )
        for a in written
    }
    for ladder_id, locked in locks.items():  # players made for posts that were replays after all
        if ladder_id not in changes and locked.inserted:
            changes[ladder_id] = storage.ladders.Change(locked.inserted, None, None, [])
    group.versions = storage.ladders.bump(session, list(group.applied), stamped=stamped, changes=changes)
    return group


@dataclass
class _Checked:
    """The posts as checked one by one: each one's outcome so far (None: to apply), the ladders by id, the posts to
    apply per ladder (``live``, in order), and the posts that repeat an earlier one's key in the group
    (``same_as``: answered as it is)."""

    outcomes: list[dict | Problem | None]
    ladders: dict[int, LadderRow]
    live: dict[int, list[int]]
    same_as: dict[int, int]


def _check(session: Session, posts: Sequence[Post]) -> _Checked:
    """Each post checked on its own: its ladder, key, idempotency record, external ids and players."""
    outcomes: list[dict | Problem | None] = [None] * len(posts)
    ladders: dict[str, LadderRow] = {}
    keys_checked: dict[tuple[int, Caller], str] = {}
    live: dict[int, list[int]] = {}
    claimed: dict[tuple[int, str], int] = {}
    same_as: dict[int, int] = {}
    external: dict[int, set[str]] = {}
    now = datetime.now(UTC)
    known = storage.ladders.by_slugs(session, sorted({post.slug for post in posts}))  # as they are now
    for n, post in enumerate(posts):
        try:
            if post.slug not in ladders:
                ladders[post.slug] = known.get(post.slug) or ladder_for_read(session, post.slug, fresh=True)
            ladder = ladders[post.slug]
            allowed = (ladder.id, post.caller)
            if allowed not in keys_checked:  # every post's own key, looked up once per group
                keys_checked[allowed] = authorize(session, ladder, post.caller, "write")
            key = post.record_key
            if key is not None:
                found = recorded_answer(session, ladder, key, post.digest, post.external_id)
                if found is not None:
                    outcomes[n] = Replayed(found)
                    continue
                first = claimed.setdefault((ladder.id, key), n)
                if first != n:
                    if posts[first].digest != post.digest:
                        raise key_reused(key, post.external_id)
                    same_as[n] = first
                    continue
            seen = external.setdefault(ladder.id, set())
            check_post(session, ladder, post, seen, now)
            seen.update(g.external_id for g in post.games if g.external_id is not None)
            live.setdefault(ladder.id, []).append(n)
        except Problem as exc:
            outcomes[n] = exc
    return _Checked(outcomes, {ladder.id: ladder for ladder in ladders.values()}, live, same_as)


def _lock(
    session: Session, posts: Sequence[Post], checked: _Checked
) -> tuple[dict[int, storage.players.Locked], list[tuple[LadderRow, storage.players.Locked, list[GameIn]]], bool]:
    """Every ladder's players locked together, in id order (new ones made); the posts that a concurrent identical
    request committed meanwhile answered as replays.  The locks, each ladder's games to replay with its players,
    and whether every player row made is for games applied here (else the ladder's players are not stamped)."""
    live, by_id = checked.live, checked.ladders
    players = {
        ladder_id: [k for n in live[ladder_id] for g in posts[n].games for side in g.sides for k in side.players]
        for ladder_id in sorted(live)
    }
    wanted: list[tuple[int, int, list[str], Callable[[list[str]], np.ndarray] | None, Mapping[str, str] | None]] = []
    for ladder_id, keys in players.items():
        ladder = by_id[ladder_id]
        names = {key: name for n in reversed(live[ladder_id]) for key, name in posts[n].names.items()}
        wanted.append((ladder_id, 2 * ladder.k, keys, initial_vectors(ladder), names))
    locks = storage.players.lock_many(session, wanted) if wanted else {}
    replaying: list[tuple[LadderRow, storage.players.Locked, list[GameIn]]] = []
    stamped = True
    for ladder_id, keys in players.items():
        ladder, members, locked = by_id[ladder_id], live[ladder_id], locks[ladder_id]
        if len(locked.index) < len(set(keys)):
            raise Conflict("a player disappeared while the game was applied", field="sides")  # retried one by one
        # A concurrent identical request (another worker) may have committed while we waited for the locks.
        for n in list(members):
            post, key = posts[n], posts[n].record_key
            found = None if key is None else recorded_answer(session, ladder, key, post.digest, post.external_id)
            if found is not None:
                checked.outcomes[n] = Replayed(found)
                members.remove(n)
        games = [g for n in members for g in posts[n].games]
        if not games:
            stamped = stamped and not (locked.created or locked.raced)  # rows made for nothing but replays: unsaved
            continue
        replaying.append((ladder, locked, games))
    return locks, replaying, stamped


def _answer(
    session: Session, posts: Sequence[Post], checked: _Checked, group: Group, written: list[Applied]
) -> list[tuple[int, str, str, dict]]:
    """Each applied post's answer (its games' bodies) into its outcome and the group's tallies; the answers to
    record under their idempotency keys."""
    records: list[tuple[int, str, str, dict]] = []
    for applied in written:
        ladder_id, members = applied.new.ladder_id, checked.live[applied.new.ladder_id]
        ladder = checked.ladders[ladder_id]
        bodies = applied.responses()
        group.shown[ladder_id] = dict(zip(applied.seqs, bodies, strict=True))
        start = 0
        for n in members:
            post = posts[n]
            out = bodies[start : start + len(post.games)]
            start += len(post.games)
            answer: dict = {"games": out} if post.batch else out[0]
            checked.outcomes[n] = answer
            group.ladder_of[n] = ladder_id
            if post.also is not None:
                post.also(session, ladder, answer)
            if post.record_key is not None:
                records.append((ladder_id, post.record_key, post.digest, answer))
        group.applied[ladder_id] = len(applied.games)
        if applied.counted is not None and ladder.auto_refit:
            group.compared[ladder_id] = applied.counted[1]
        if applied.written is not None:
            group.written[ladder_id] = applied.written
    return records
