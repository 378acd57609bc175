"""A ladder built to be heavy to read: one player, "hub", in many singles and in free-for-alls of the largest size
the API takes (64 sides of 32 players), for the tests and benchmarks of heavy reads beside light ones."""

from __future__ import annotations

import time

import httpx
import numpy as np

from devtools.server import ADMIN_KEY

#: The largest free-for-all: 64 sides of 32 players.
SIDES, PER_SIDE = 64, 32


def ladder(base: str, slug: str, **config) -> dict[str, str]:
    """A public ladder without auto refits (their child process would take a core); its write key's header."""
    body = {"slug": slug, "auto_refit": False} | config
    r = httpx.post(base + "/v1/ladders", json=body, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=60)
    assert r.status_code == 201, r.text
    return {"Authorization": f"Bearer {r.json()['write_key']}"}


def hub_ladder(base: str, slug: str, singles: int, free_for_alls: int, seed: int = 7) -> dict[str, str]:
    """A ladder where "hub" played ``singles`` singles against 300 others and ``free_for_alls`` free-for-alls of
    2,048 players (drawn from 4,000); its write key's header."""
    headers = ladder(base, slug)
    rng = np.random.default_rng(seed)
    with httpx.Client(base_url=f"{base}/v1/ladders/{slug}", headers=headers, timeout=120) as client:
        for start in range(0, singles, 1000):
            games = [
                {"sides": [{"players": ["hub"], "rank": 1 + int(r)}, {"players": [f"s{j}"], "rank": 2 - int(r)}]}
                for r, j in zip(rng.integers(0, 2, 1000), rng.integers(0, 300, 1000), strict=True)
            ][: singles - start]
            r = client.post("/games/batch", json={"games": games})
            assert r.status_code == 201, r.text
        for _ in range(free_for_alls):
            players = ["hub", *(f"f{j}" for j in rng.permutation(4000)[: SIDES * PER_SIDE - 1])]
            sides = [
                {"players": players[n * PER_SIDE : (n + 1) * PER_SIDE], "rank": int(rank)}
                for n, rank in enumerate(rng.permutation(SIDES) + 1)
            ]
            r = client.post("/games", json={"sides": sides})
            assert r.status_code == 201, r.text
    return headers


#: What a light ladder's users ask while the hub is read: liveness, its opponents, its latest games, a post.
PROBES = {
    "healthz": ("GET", "/healthz", None),
    "opponents": ("GET", "/v1/ladders/other/players/p1/opponents", None),
    "games": ("GET", "/v1/ladders/other/games?limit=5", None),
    "post": (
        "POST",
        "/v1/ladders/other/games",
        {"sides": [{"players": ["p1"], "rank": 1}, {"players": ["p2"], "rank": 2}]},
    ),
}


def light_ladder(base: str) -> str:
    """The ladder "other" the probes ask about: 10 players, 200 games; its write key."""
    headers = ladder(base, "other")
    rng = np.random.default_rng(1)
    games = [
        {"sides": [{"players": [f"p{i}"], "rank": 1}, {"players": [f"p{j}"], "rank": 2}]}
        for i, j in (rng.choice(10, size=2, replace=False) for _ in range(200))
    ]
    r = httpx.post(base + "/v1/ladders/other/games/batch", json={"games": games}, headers=headers, timeout=60)
    assert r.status_code == 201, r.text
    return headers["Authorization"].removeprefix("Bearer ")


def probe(base: str, key: str, done, measured) -> None:
    """Each of :data:`PROBES` in turn until ``done`` (run it in a process of its own): every latency (seconds) and
    status, put on ``measured``."""
    times: dict[str, list[float]] = {name: [] for name in PROBES}
    statuses: list[int] = []
    with httpx.Client(base_url=base, timeout=120, headers={"Authorization": f"Bearer {key}"}) as client:
        while not done.is_set():
            for name, (method, path, body) in PROBES.items():
                start = time.perf_counter()
                statuses.append(client.request(method, path, json=body).status_code)
                times[name].append(time.perf_counter() - start)
            time.sleep(0.02)
    measured.put((times, statuses))
