"""Game servers posting to several ladders and people reading them, in threads, while the database behind the
service fails over (tests/test_failover.py, bench/bench_failover.py): what was acknowledged, when, and any answer
that is neither a success nor a 503 problem with Retry-After."""

from __future__ import annotations

import threading
import time
from collections import Counter

import httpx


def game(key: str, external_id: bool = True) -> dict:
    """The game sent under Idempotency-Key ``key``, the same body on every try.  Its first side is a player named
    ``key``, new to the ladder, so the game is found afterwards whatever else it carries (:func:`stored_once`);
    with ``external_id``, the key is its ``external_id`` too (a second guard against a double count), without,
    the Idempotency-Key alone keeps a retry from counting twice."""
    n = sum(map(ord, key))
    sides = [{"players": [key], "rank": 1}, {"players": [f"p{n % 12}"], "rank": 2}]
    return {"sides": sides} | ({"external_id": key} if external_id else {})


def posted_as(stored: dict) -> str:
    """The key a stored game was posted under (its first side's player, :func:`game`)."""
    return stored["sides"][0]["players"][0]["key"]


def all_games(http: httpx.Client, slug: str) -> list[dict]:
    """Every game of a ladder, a page at a time."""
    games, cursor = [], None
    while True:
        params = {"limit": 500} | ({"cursor": cursor} if cursor else {})
        page = http.get(f"/v1/ladders/{slug}/games", params=params).json()
        games += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return games


class Load:
    """Game servers posting to every ladder (each game under its own Idempotency-Key, retried with the same key
    until acknowledged, as a client does; every other game without an ``external_id``) and people reading
    leaderboards and game lists, in threads.

    What a test asserts on: ``acknowledged`` (key -> (ladder, game id, when its last try was sent, when it was
    acknowledged)), ``statuses`` seen, ``refused`` (when a post got a 503), ``slowest`` (the longest any request
    took, in seconds), and ``errors``: any answer but 201/200 or a 503 problem with Retry-After, a request that
    got no answer, a game not acknowledged within ``patience`` seconds, or a thread's exception."""

    def __init__(
        self, base: str, keys: dict[str, dict], tag: str, posters: int = 6, readers: int = 2, patience: float = 60
    ) -> None:
        """``keys``: each ladder's write key header; ``tag`` begins every Idempotency-Key (one tag a run)."""
        self.base, self.keys, self.tag, self.ladders, self.patience = base, keys, tag, list(keys), patience
        self.acknowledged: dict[str, tuple[str, int, float, float]] = {}
        self.refused: list[float] = []
        self.statuses: Counter[int] = Counter()
        self.slowest = 0.0
        self.errors: list[str] = []
        self.stop_ = threading.Event()
        self.threads = [threading.Thread(target=self._guarded, args=(self._post, c)) for c in range(posters)]
        self.threads += [threading.Thread(target=self._guarded, args=(self._read, r)) for r in range(readers)]

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_) -> None:
        self.stop_.set()
        deadline = time.monotonic() + self.patience + 5  # a post in its retries ends within its patience
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))
            if t.is_alive():
                self.errors.append(f"{t.name} did not stop")

    def answered(self, r: httpx.Response, what: str) -> bool:
        """Record an answer and how long it took; whether it is a success.  A 503 must be a problem saying when
        to retry."""
        self.statuses[r.status_code] += 1
        self.slowest = max(self.slowest, r.elapsed.total_seconds())
        if r.status_code in (200, 201):
            return True
        problem = r.headers.get("content-type", "").startswith("application/problem+json")
        if r.status_code != 503 or "retry-after" not in r.headers or not problem:
            self.errors.append(f"{what}: {r.status_code} {r.headers.get('retry-after')} {r.text[:300]}")
        return False

    def _guarded(self, work, n: int) -> None:
        try:
            work(n)
        except Exception as exc:  # recorded, for the test to fail on
            self.errors.append(f"{threading.current_thread().name}: {exc!r}")

    def _post(self, c: int) -> None:
        with httpx.Client(base_url=self.base, timeout=self.patience) as http:
            n = 0
            while not self.stop_.is_set() and not self.errors:
                idem = f"{self.tag}-c{c}-{n}"
                slug = self.ladders[(c + n) % len(self.ladders)]
                deadline = time.monotonic() + self.patience
                while True:
                    if self.errors:
                        return
                    if time.monotonic() > deadline:
                        self.errors.append(f"{idem}: not acknowledged within {self.patience:g} s")
                        return
                    sent = time.monotonic()
                    try:
                        r = http.post(
                            f"/v1/ladders/{slug}/games",
                            json=game(idem, external_id=n % 2 == 0),
                            headers={**self.keys[slug], "Idempotency-Key": idem},
                        )
                    except httpx.TransportError as exc:
                        self.errors.append(f"{idem}: the service did not answer: {exc!r}")
                        return
                    if self.answered(r, idem):
                        self.acknowledged[idem] = (slug, r.json()["id"], sent, time.monotonic())
                        break
                    self.refused.append(time.monotonic())
                    time.sleep(0.05)
                n += 1

    def _read(self, r: int) -> None:
        with httpx.Client(base_url=self.base, timeout=self.patience) as http:
            n = 0
            while not self.stop_.is_set() and not self.errors:
                slug = self.ladders[n % len(self.ladders)]
                path = f"/v1/ladders/{slug}/leaderboard" if (n + r) % 2 else f"/v1/ladders/{slug}/games?limit=5"
                try:
                    self.answered(http.get(path), path)
                except httpx.TransportError as exc:
                    self.errors.append(f"{path}: the service did not answer: {exc!r}")
                    return
                n += 1
                time.sleep(0.02)

    def stored(self) -> Counter[str]:
        """How many times each key's game is stored on the load's ladders (found by its first player, so a game
        posted without an ``external_id`` is found too, and a game number that a lost game had and a later game
        took is not mistaken for it)."""
        with httpx.Client(base_url=self.base, timeout=60) as http:
            return Counter(posted_as(g) for slug in self.ladders for g in all_games(http, slug))

    def missing(self) -> tuple[list[str], dict[str, int]]:
        """The acknowledged games not stored (their keys), and the games stored more than once (key -> count)."""
        stored = self.stored()
        return [key for key in self.acknowledged if key not in stored], {k: n for k, n in stored.items() if n > 1}

    def wait_for(self, count: int, timeout: float = 30) -> None:
        """Until ``count`` games are acknowledged (the load runs)."""
        deadline = time.monotonic() + timeout
        while len(self.acknowledged) < count and not self.errors:
            assert time.monotonic() < deadline, f"only {len(self.acknowledged)} acknowledged"
            time.sleep(0.05)

    def first_ack_after(self, kill: float, timeout: float = 60) -> float:
        """Seconds from ``kill`` to the first acknowledgement of a post sent once posts were refused after it:
        the new primary's first.  (A primary's backends outlive a kill -9 of its postmaster by a moment, and
        those already connected may still commit, the synchronous standby having the commit before the
        acknowledgement.)"""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.errors:
            down = next((t for t in list(self.refused) if t > kill), None)
            after = [acked for _, _, sent, acked in list(self.acknowledged.values()) if down and sent > down]
            if after:
                return min(after) - kill
            time.sleep(0.02)
        raise AssertionError(f"no game acknowledged after the kill: {self.errors[:3]}")
