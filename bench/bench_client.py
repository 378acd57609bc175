"""What melo-client costs over plain httpx, against the same server in the same run.

    python -m bench.bench_client [--games 10000]

A 1,000-player ladder (SQLite, one uvicorn worker, auto refit off) receives
games posted one by one over one keep-alive connection, alternately by plain
``httpx.Client.post`` (the baseline: the same JSON and an Idempotency-Key
header) and by ``Melo.games.post`` (which builds the body, sends its own
Idempotency-Key and parses the answer into typed objects), in rounds of 1,000
so that both meet the same machine.  Then the same games through the batch
endpoint: plain ``httpx`` posting 1,000 a request, against
``Melo.games.post_many``, alternately, three times each (the mean is reported).  Prints a table and writes
bench/results/bench_client.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from melo_client import Melo, game

from bench.bench_api import Server, seed_ladder

RESULTS = Path(__file__).parent / "results"
ROUND = 1_000
BATCH_ROUNDS = 3


def games(n: int, offset: int) -> list[dict]:
    return [game(winner=f"p{(k * 7) % 1000}", loser=f"p{(k * 13 + 1) % 1000}") for k in range(offset, offset + n)]


def plain_one_by_one(base: str, key: str, batch: list[dict]) -> float:
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        t = time.perf_counter()
        for body in batch:
            response = http.post("/v1/ladders/bench/games", json=body, headers={"Idempotency-Key": uuid.uuid4().hex})
            assert response.status_code == 201, response.text
            response.json()
        return time.perf_counter() - t


def client_one_by_one(base: str, key: str, batch: list[dict]) -> float:
    with Melo(base, key=key, ladder="bench", timeout=30) as melo:
        t = time.perf_counter()
        for body in batch:
            melo.games.post(sides=body["sides"])
        return time.perf_counter() - t


def plain_batches(base: str, key: str, batch: list[dict]) -> float:
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        t = time.perf_counter()
        for lo in range(0, len(batch), 1_000):
            part = {"games": batch[lo : lo + 1_000]}
            response = http.post(
                "/v1/ladders/bench/games/batch", json=part, headers={"Idempotency-Key": uuid.uuid4().hex}
            )
            assert response.status_code == 201, response.text
            response.json()
        return time.perf_counter() - t


def client_batches(base: str, key: str, batch: list[dict]) -> float:
    with Melo(base, key=key, ladder="bench", timeout=60) as melo:
        t = time.perf_counter()
        assert len(melo.games.post_many(batch)) == len(batch)
        return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/client.db"
        key = seed_ladder(url, 1_000, auto_refit=False)
        server = Server(url)
        try:
            seconds = {"plain httpx": 0.0, "melo-client": 0.0, "plain httpx, batches": 0.0, "post_many": 0.0}
            offset = 0
            for _ in range(args.games // ROUND):  # alternating rounds: both meet the same machine
                for name, post in (("plain httpx", plain_one_by_one), ("melo-client", client_one_by_one)):
                    seconds[name] += post(server.base, key, games(ROUND, offset))
                    offset += ROUND
            for _ in range(BATCH_ROUNDS):  # alternating too: one batch run is a second or two
                for name, post in (("plain httpx, batches", plain_batches), ("post_many", client_batches)):
                    seconds[name] += post(server.base, key, games(args.games, offset)) / BATCH_ROUNDS
                    offset += args.games
        finally:
            server.stop()
    rate = {name: args.games / s for name, s in seconds.items()}
    out = {
        "games": args.games,
        "seconds": seconds,
        "games_per_s": rate,
        "client_overhead_one_by_one": seconds["melo-client"] / seconds["plain httpx"] - 1,
        "post_many_vs_batches": seconds["post_many"] / seconds["plain httpx, batches"] - 1,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    print(f"| {args.games:,} games, SQLite, 1 worker | seconds | games/s |\n|---|---|---|")
    for name in seconds:
        print(f"| {name} | {seconds[name]:.2f} | {rate[name]:,.0f} |")
    print(f"\nmelo-client one by one: {out['client_overhead_one_by_one']:+.1%} time against plain httpx")
    print(f"post_many: {out['post_many_vs_batches']:+.1%} time against plain batches of 1,000")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_client.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
