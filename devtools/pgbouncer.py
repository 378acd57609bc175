"""A throwaway PgBouncer in transaction mode in front of a test PostgreSQL server: Debian's binary, loopback only."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from devtools.postgres import PostgresServer, _free_port

#: The settings docs/operations.md gives, on a throwaway port: transaction pooling, and the startup parameter psycopg
#: sends that PgBouncer does not pass on.  The query timeout bounds what the service's per-transaction timeouts
#: cannot reach (reads outside a transaction).
INI = """[databases]
* = host=127.0.0.1 port={pg_port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {dir}/users.txt
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 40
ignore_startup_parameters = extra_float_digits,options
query_timeout = 30
server_login_retry = 1
server_reset_query =
logfile = {dir}/pgbouncer.log
pidfile = {dir}/pgbouncer.pid
"""


def installed() -> bool:
    return shutil.which("pgbouncer") is not None or Path("/usr/sbin/pgbouncer").exists()


class PgBouncer:
    def __init__(self, postgres: PostgresServer) -> None:
        self.postgres = postgres
        self.dir = Path(tempfile.mkdtemp(prefix="melo-pgbouncer-"))
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None
        (self.dir / "users.txt").write_text('"postgres" ""\n')
        (self.dir / "pgbouncer.ini").write_text(INI.format(pg_port=postgres.port, port=self.port, dir=self.dir))
        if postgres.as_user:
            shutil.chown(self.dir, "postgres")
            for path in self.dir.iterdir():
                shutil.chown(path, "postgres")

    def start(self) -> None:
        binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
        self.proc = subprocess.Popen(
            [*self.postgres.as_user, binary, str(self.dir / "pgbouncer.ini")],
            cwd=self.dir,  # its own directory: the caller's may be one its user cannot enter
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 30
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"PgBouncer did not start: {(self.dir / 'pgbouncer.log').read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None:
            pid = self.dir / "pgbouncer.pid"
            if pid.exists():  # the process itself, under runuser: a shutdown that waits for no client
                os.kill(int(pid.read_text().split()[0]), signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, database: str) -> str:
        """The URL of ``database`` through the pooler, as the service takes it: ``pgbouncer=true`` says that it is
        a pooler in transaction mode."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}?pgbouncer=true"
