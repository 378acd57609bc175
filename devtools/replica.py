"""A streaming replica of a throwaway PostgreSQL server (devtools/postgres.py), as an operator makes one."""

from __future__ import annotations

import time

import psycopg

from devtools.postgres import PostgresServer


def standby(primary: PostgresServer) -> PostgresServer:
    """A hot standby of ``primary`` on its own loopback port: a base backup by ``pg_basebackup -R`` (which writes
    the connection to the primary into the copy), started, streaming from the primary."""
    replica = PostgresServer()
    backup = ["pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres"]
    replica._run(str(replica.bin / backup[0]), *backup[1:], "-D", str(replica.dir / "data"), "-R", "-c", "fast")
    replica.restart()
    deadline = time.time() + 30
    while time.time() < deadline:
        with psycopg.connect(replica.url(), autocommit=True) as conn:
            if conn.execute("SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'").fetchone()[0]:
                return replica
        time.sleep(0.1)
    raise RuntimeError("the replica does not stream from the primary")
