"""PostgreSQL high availability with Patroni (issue 49): what a failover costs the service, and what synchronous
replication costs and buys.

    nice python -m bench.bench_failover [--workers 2] [--seconds 8] [--rounds 2] [--lag 2] [--no-defaults]

The cluster of docs/scaling.md and tests/test_failover.py (devtools/patroni.py): a one-member etcd, Patroni with two
PostgreSQL 15 servers (fsync on) and HAProxy by Patroni's REST API, on this machine; the service (``--workers``
workers) writes through HAProxy's primary port and reads lag-tolerant pages through its replica port.

1. Post throughput, synchronous against asynchronous replication: 8 posters on 8 ladders for ``--seconds`` each,
   the mode switched on the same cluster (``PATCH /config``), ``--rounds`` times in alternation.
2. kill -9 of the primary's postmaster under load (6 posters, 2 readers), in synchronous mode with Patroni's tight
   timings (ttl 10, loop_wait 1, retry_timeout 4) and, on a second cluster, its defaults (ttl 30, loop_wait 10,
   retry_timeout 10): seconds from the kill to the first acknowledged post on the new primary, to the old primary
   streaming again as a standby, acknowledged games lost (by each game's ``external_id``), every ladder's
   ``/audit``.  Then the same with the primary's Patroni killed too (its machine lost): the standby waits for the
   leader key to expire.
3. A standby behind when the primary dies: the primary's WAL senders stopped (SIGSTOP) for ``--lag`` seconds
   under load, then the primary killed with them: in synchronous mode the commits wait for the standby (none
   is acknowledged that it lacks); in asynchronous mode, the games acknowledged meanwhile are lost.

Prints tables and writes bench/results/bench_failover.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import httpx
import numpy as np

from app.core.config import Settings
from app.core.migrate import upgrade
from devtools.game_load import Load
from devtools.patroni import DEFAULTS, TIGHT, Cluster, missing
from devtools.server import ADMIN_KEY, live_server

RESULTS = Path(__file__).parent / "results"
LADDERS = [f"b{n}" for n in range(8)]


def ladders(base: str) -> dict[str, dict]:
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    keys = {}
    for slug in LADDERS:
        made = httpx.post(base + "/v1/ladders", json={"slug": slug}, headers=admin, timeout=30).json()
        keys[slug] = {"Authorization": f"Bearer {made['write_key']}"}
    return keys


def throughput(base: str, keys: dict, tag: str, seconds: float) -> dict:
    with Load(base, keys, tag, posters=8, readers=0) as load:
        time.sleep(1.0)  # warm-up: connections opened
        start, before = time.monotonic(), len(load.acknowledged)
        time.sleep(seconds)
        done, elapsed = len(load.acknowledged) - before, time.monotonic() - start
        latencies = [acked - sent for _, _, sent, acked in list(load.acknowledged.values()) if sent >= start]
    assert not load.errors, load.errors[:3]
    return {
        "posts_per_s": round(done / elapsed, 1),
        "p50_ms": round(float(np.percentile(latencies, 50)) * 1000, 1),
        "p99_ms": round(float(np.percentile(latencies, 99)) * 1000, 1),
    }


def audits(base: str) -> bool:
    with httpx.Client(base_url=base, timeout=120) as http:
        return all(http.get(f"/v1/ladders/{slug}/audit").json()["consistent"] for slug in LADDERS)


def kill_under_load(cluster: Cluster, base: str, keys: dict, tag: str, lag: float = 0.0, host: bool = False) -> dict:
    """kill -9 the primary's postmaster under load (after holding its WAL senders ``lag`` seconds, if given), or
    its Patroni with it (``host``: its machine lost; started again once the new primary answers)."""
    old = cluster.leader()
    with Load(base, keys, tag) as load:
        load.wait_for(40)
        if lag:
            cluster.hold_replication()
            time.sleep(lag)
        acknowledged_at_kill = len(load.acknowledged)
        killed = time.monotonic()
        if host:
            cluster.kill_host()
            new, kills = cluster.wait_leader(other_than=old, timeout=120), 1
        else:  # killed again if Patroni restarted it in place (Cluster.fail_over)
            new, kills = cluster.fail_over(timeout=120)[1:]
        leader_after = time.monotonic() - killed
        first_ack = load.first_ack_after(killed, timeout=120)
        if host:
            cluster.start_member(cluster.member(old))
        cluster.wait_healthy(180)
        rejoined = time.monotonic() - killed
        load.wait_for(len(load.acknowledged) + 20, timeout=60)
    lost, twice = load.missing()
    return {
        "old_primary": old,
        "new_primary": new,
        "kills": kills,
        "kill_to_new_leader_s": round(leader_after, 1),
        "kill_to_first_ack_s": round(first_ack, 1),
        "kill_to_old_primary_streaming_s": round(rejoined, 1),
        "acknowledged": len(load.acknowledged),
        "acknowledged_before_kill": acknowledged_at_kill,
        "lost": len(lost),
        "stored_twice": len(twice),
        "statuses": dict(sorted(load.statuses.items())),
        "errors": load.errors[:3],
        "audit_consistent": audits(base),
        "patronictl_list": cluster.patronictl_list(),
    }


def with_service(cluster: Cluster, workers: int):
    url = cluster.create_database("melo")
    upgrade(Settings(database_url=url).sqlalchemy_url)
    return live_server(url, workers=workers, env={"MELO_READ_DATABASE_URL": cluster.replica_url("melo")})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--lag", type=float, default=2.0)
    parser.add_argument("--no-defaults", action="store_true", help="skip the run with Patroni's default timings")
    args = parser.parse_args()
    if missing() is not None:
        sys.exit(f"{missing()}: run scripts/ensure-patroni.sh")
    out: dict = {"machine": platform.node(), "cpus": os.cpu_count(), "args": vars(args)}

    cluster = Cluster(2, synchronous=True, timings=TIGHT, fsync=True)
    try:
        cluster.start()
        with with_service(cluster, args.workers) as base:
            keys = ladders(base)
            rows: dict[str, list[dict]] = {"synchronous": [], "asynchronous": []}
            for r in range(args.rounds):
                for mode in rows:
                    cluster.set_synchronous(mode == "synchronous")
                    rows[mode].append(throughput(base, keys, f"t{r}{mode[0]}", args.seconds))
            out["throughput"] = rows
            cluster.set_synchronous(True)
            out["kill_tight_sync"] = kill_under_load(cluster, base, keys, "ks")
            out["behind_sync"] = kill_under_load(cluster, base, keys, "bs", lag=args.lag)
            cluster.set_synchronous(False)
            out["behind_async"] = kill_under_load(cluster, base, keys, "ba", lag=args.lag)
            cluster.set_synchronous(True)
            out["host_tight_sync"] = kill_under_load(cluster, base, keys, "hs", host=True)
    finally:
        cluster.stop()
    if not args.no_defaults:
        cluster = Cluster(2, synchronous=True, timings=DEFAULTS, fsync=True)
        try:
            cluster.start(timeout=300)
            with with_service(cluster, args.workers) as base:
                keys = ladders(base)
                out["kill_defaults_sync"] = kill_under_load(cluster, base, keys, "kd")
                out["host_defaults_sync"] = kill_under_load(cluster, base, keys, "hd", host=True)
        finally:
            cluster.stop()

    print(f"\nPost throughput, 8 posters on 8 ladders, {args.workers} workers, {args.seconds:g} s a round:")
    print(f"{'replication':<14}{'posts/s':>10}{'p50 ms':>10}{'p99 ms':>10}")
    for mode, results in out["throughput"].items():
        for row in results:
            print(f"{mode:<14}{row['posts_per_s']:>10}{row['p50_ms']:>10}{row['p99_ms']:>10}")
    sync = np.mean([r["posts_per_s"] for r in out["throughput"]["synchronous"]])
    asyn = np.mean([r["posts_per_s"] for r in out["throughput"]["asynchronous"]])
    out["sync_over_async"] = round(float(sync / asyn), 2)
    print(f"synchronous / asynchronous: {out['sync_over_async']}")
    print("\nkill -9 of the primary's postmaster under load (6 posters, 2 readers):")
    head = f"{'run':<40}{'leader s':>9}{'1st ack s':>10}{'rejoin s':>9}{'acked':>7}{'lost':>6}{'audit':>7}"
    print(head)
    names = {
        "kill_tight_sync": "sync, ttl 10 loop 1 retry 4",
        "kill_defaults_sync": "sync, Patroni defaults (30/10/10)",
        "host_tight_sync": "sync, host lost, ttl 10 loop 1 retry 4",
        "host_defaults_sync": "sync, host lost, defaults (30/10/10)",
        "behind_sync": f"sync, standby held {args.lag:g} s",
        "behind_async": f"async, standby held {args.lag:g} s",
    }
    for key, name in names.items():
        if key in out:
            r = out[key]
            print(
                f"{name:<40}{r['kill_to_new_leader_s']:>9}{r['kill_to_first_ack_s']:>10}"
                f"{r['kill_to_old_primary_streaming_s']:>9}{r['acknowledged']:>7}{r['lost']:>6}"
                f"{'ok' if r['audit_consistent'] else 'NO':>7}"
            )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_failover.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
