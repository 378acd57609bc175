"""A throwaway PostgreSQL server for the tests: Debian's binaries, a temporary data directory, loopback only."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self, fsync: bool = False) -> None:
        """``fsync``: make commits durable (benchmarks); the tests run without."""
        self.fsync = fsync
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            raise RuntimeError("PostgreSQL is not installed: run scripts/ensure-postgres.sh (make test does).")
        self.bin = Path(found[-1]).parent
        self.dir = Path(tempfile.mkdtemp(prefix="melo-pg-"))
        self.port = _free_port()
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_user:
            shutil.chown(self.dir, "postgres")

    def _run(self, *args: str) -> None:
        """Run a PostgreSQL program as the server's user, in the server's directory: the caller's working directory
        may be one that user cannot enter (a clone in a home directory of mode 700, the tests run as root), where
        PostgreSQL's programs warn that they cannot change back to it."""
        subprocess.run([*self.as_user, *args], check=True, capture_output=True, cwd=self.dir)

    def start(self) -> None:
        self._run(
            str(self.bin / "initdb"), "-D", str(self.dir / "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8"
        )
        self.restart()

    def restart(self) -> None:
        """Start the server on its data directory (after :meth:`crash`, it recovers from its write-ahead log)."""
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c max_connections=200"
        opts += "" if self.fsync else " -c fsync=off"
        data = str(self.dir / "data")
        self._run(str(self.bin / "pg_ctl"), "-D", data, "-o", opts, "-l", str(self.dir / "log"), "-w", "start")
        deadline = time.time() + 30
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        raise RuntimeError("PostgreSQL did not start")

    def crash(self) -> None:
        """Stop the server at once, as a crash would (no checkpoint, connections cut), keeping its data.  Nothing
        to do once it was stopped for good (its directory is gone)."""
        if not self.dir.exists():
            return
        subprocess.run(
            [*self.as_user, str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "immediate", "stop"],
            capture_output=True,
            cwd=self.dir,
        )

    def stop(self) -> None:
        self.crash()
        shutil.rmtree(self.dir, ignore_errors=True)

    def freeze(self, frozen: bool = True) -> None:
        """SIGSTOP (or SIGCONT) the server and every one of its processes: a database that stops answering."""
        # The postmaster first, so that it starts no process once its children are listed; a child may end
        # between the listing and its signal (a backend whose client hung up), and is then left alone.
        postmaster = int((self.dir / "data" / "postmaster.pid").read_text().split()[0])
        sent = signal.SIGSTOP if frozen else signal.SIGCONT
        os.kill(postmaster, sent)
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
        for pid in map(int, children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sent)

    def create_database(self, name: str, template: str | None = None) -> str:
        """A new database on this server, empty or a copy of ``template`` (a database no one is connected to); its
        URL."""
        # FILE_COPY copies the template's files as they are (the default, WAL_LOG, also writes them all to the
        # write-ahead log).
        copy = f' TEMPLATE "{template}" STRATEGY FILE_COPY' if template else ""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{copy}')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop a database, cutting off whoever is still connected to it."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"
