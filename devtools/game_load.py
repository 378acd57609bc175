"""Game servers posting to several ladders and people reading them, in threads, while the database behind the
service fails over (tests/test_failover.py, bench/bench_failover.py): what was acknowledged, when, and any answer
that is neither a success nor a 503 problem with Retry-After."""

from __future__ import annotations

import threading
import time
from collections import Counter

import httpx


def game(key: str) -> dict:
    """The game sent under Idempotency-Key ``key``, the same body on every try: ``external_id`` is the key (to find
    it afterwards)."""
    n = sum(map(ord, key))
    sides = [{"players": [f"p{n % 12}"], "rank": 1}, {"players": [f"p{(n + 5) % 12}"], "rank": 2}]
    return {"sides": sides, "external_id": key}


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
    until acknowledged, as a client does) and people reading leaderboards and game lists, in threads.

    What a test asserts on: ``acknowledged`` (key -> (ladder, game id, when its last try was sent, when it was
    acknowledged)), ``statuses`` seen, ``refused`` (when a post got a 503), and ``errors``: any answer but
    201/200 or a 503 problem with Retry-After."""

    def __init__(self, base: str, keys: dict[str, dict], tag: str, posters: int = 6, readers: int = 2) -> None:
        """``keys``: each ladder's write key header; ``tag`` begins every Idempotency-Key (one tag a run)."""
        self.base, self.keys, self.tag, self.ladders = base, keys, tag, list(keys)
        self.acknowledged: dict[str, tuple[str, int, float, float]] = {}
        self.refused: list[float] = []
        self.statuses: Counter[int] = Counter()
        self.errors: list[str] = []
        self.stop_ = threading.Event()
        self.threads = [threading.Thread(target=self._post, args=(c,)) for c in range(posters)]
        self.threads += [threading.Thread(target=self._read, args=(r,)) for r in range(readers)]

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_) -> None:
        self.stop_.set()
        for t in self.threads:
            t.join()

    def _answered(self, r: httpx.Response, what: str) -> bool:
        """Record an answer; whether it is a success.  A 503 must be a problem saying when to retry."""
        self.statuses[r.status_code] += 1
        if r.status_code in (200, 201):
            return True
        problem = r.headers.get("content-type", "").startswith("application/problem+json")
        if r.status_code != 503 or "retry-after" not in r.headers or not problem:
            self.errors.append(f"{what}: {r.status_code} {r.headers.get('retry-after')} {r.text[:300]}")
        return False

    def _post(self, c: int) -> None:
        with httpx.Client(base_url=self.base, timeout=60) as http:
            n = 0
            while not self.stop_.is_set() and not self.errors:
                idem = f"{self.tag}-c{c}-{n}"
                slug = self.ladders[(c + n) % len(self.ladders)]
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and not self.errors:
                    sent = time.monotonic()
                    try:
                        r = http.post(
                            f"/v1/ladders/{slug}/games",
                            json=game(idem),
                            headers={**self.keys[slug], "Idempotency-Key": idem},
                        )
                    except httpx.TransportError as exc:
                        self.errors.append(f"{idem}: the service did not answer: {exc!r}")
                        return
                    if self._answered(r, idem):
                        self.acknowledged[idem] = (slug, r.json()["id"], sent, time.monotonic())
                        break
                    self.refused.append(time.monotonic())
                    time.sleep(0.05)
                else:
                    self.errors.append(f"{idem}: not acknowledged within 60 s") if not self.errors else None
                    return
                n += 1

    def _read(self, r: int) -> None:
        with httpx.Client(base_url=self.base, timeout=60) as http:
            n = 0
            while not self.stop_.is_set():
                slug = self.ladders[n % len(self.ladders)]
                path = f"/v1/ladders/{slug}/leaderboard" if (n + r) % 2 else f"/v1/ladders/{slug}/games?limit=5"
                try:
                    self._answered(http.get(path), path)
                except httpx.TransportError as exc:
                    self.errors.append(f"{path}: the service did not answer: {exc!r}")
                    return
                n += 1
                time.sleep(0.02)

    def missing(self) -> tuple[list[str], int]:
        """The acknowledged games not stored (their keys: each game's ``external_id`` is its Idempotency-Key, so a
        game number that a lost game had and a later game took is not mistaken for it), and how many games are
        stored more than once."""
        with httpx.Client(base_url=self.base, timeout=60) as http:
            stored = Counter(g["external_id"] for slug in self.ladders for g in all_games(http, slug))
        return [key for key in self.acknowledged if key not in stored], sum(n > 1 for n in stored.values())

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
