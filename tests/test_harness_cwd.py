"""The harnesses that run as root start PostgreSQL, PgBouncer and Patroni as the postgres user (devtools/): each such
process runs in a directory of its own, whatever the caller's working directory.  A clone in a home directory (mode
700) is one the postgres user may not enter: Patroni started from there died at its start of PostgreSQL (Python's
multiprocessing changes to the parent's working directory), and the cluster never came up; PostgreSQL's programs
warned that they could not change back to it.  tests/test_failover.py starts its cluster from such a directory
(:func:`private_cwd`) and checks its processes (:func:`cwd`, :func:`may_enter`)."""

from __future__ import annotations

import subprocess
import time

import psycopg
import pytest

from devtools.pgbouncer import PgBouncer
from devtools.pgbouncer import installed as pgbouncer_installed
from devtools.postgres import PostgresServer
from devtools.replica import standby
from tests.helpers import AS_ROOT, cwd, may_enter, owner, private_cwd

#: What PostgreSQL's programs print when they cannot change back to the directory they were started in.
CANNOT_CHANGE = "could not change directory"


@pytest.fixture
def outputs(monkeypatch) -> list[str]:
    """The output of each program the test runs to its end (``subprocess.run``): the harness keeps it to itself."""
    seen: list[str] = []
    run = subprocess.run

    def recorded(*args, **kwargs) -> subprocess.CompletedProcess:
        done = run(*args, **kwargs)
        for out in (done.stdout, done.stderr):
            seen.append(out.decode(errors="replace") if isinstance(out, bytes) else out or "")
        return done

    monkeypatch.setattr(subprocess, "run", recorded)
    return seen


@pytest.mark.skipif(not AS_ROOT, reason="the harness switches to the postgres user only when run as root")
def test_postgres_and_a_standby_start_from_a_directory_postgres_may_not_enter(outputs):
    """initdb, pg_ctl and pg_basebackup, as the postgres user, run in the server's directory: none of them warns
    that it cannot change back to the caller's."""
    with private_cwd():
        primary = PostgresServer()
        replica = None
        try:
            primary.start()
            replica = standby(primary)
            with psycopg.connect(replica.url(), autocommit=True) as conn:
                assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]
        finally:
            for server in (replica, primary):
                if server is not None:
                    server.stop()
    warned = [out for out in outputs if CANNOT_CHANGE in out]
    assert not warned, warned


@pytest.mark.skipif(not AS_ROOT, reason="the harness switches to the postgres user only when run as root")
def test_pgbouncer_started_from_a_directory_postgres_may_not_enter_runs_in_its_own(postgres):
    if not pgbouncer_installed():
        pytest.skip("PgBouncer is not installed: scripts/ensure-postgres.sh installs Debian's package (make test does)")
    with private_cwd():
        pooler = PgBouncer(postgres)
        try:
            pooler.start()
            pidfile = pooler.dir / "pgbouncer.pid"
            deadline = time.monotonic() + 10
            while not pidfile.exists() or not pidfile.read_text().strip():
                assert time.monotonic() < deadline, "PgBouncer wrote no pid file"
                time.sleep(0.05)
            pid = int(pidfile.read_text().split()[0])
            where = cwd(pid)
            assert owner(pid) == "postgres"
            assert where == pooler.dir and may_enter("postgres", where), where
            with psycopg.connect(f"postgresql://postgres@127.0.0.1:{pooler.port}/postgres", autocommit=True) as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)
        finally:
            pooler.stop()
