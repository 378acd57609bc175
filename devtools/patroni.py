"""A throwaway high-availability PostgreSQL cluster on loopback, as docs/scaling.md runs one: a one-member etcd,
Patroni managing two or three PostgreSQL servers (Debian's packages), and HAProxy sending connections to the
leader (port ``primary_port``) and to the replicas (``replica_port``) by Patroni's REST API.  Its configuration
files are the examples in deploy/, with loopback addresses, temporary directories and the chosen timings."""

from __future__ import annotations

import contextlib
import copy
import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import yaml

from devtools.etcd import Etcd, steady_port
from devtools.etcd import installed as etcd_installed
from devtools.haproxy import binary as haproxy_binary

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"

#: Patroni's timings (seconds): its defaults, and the tight ones the tests use (a failover in seconds).  Patroni
#: requires loop_wait + 2 * retry_timeout <= ttl.
DEFAULTS = {"ttl": 30, "loop_wait": 10, "retry_timeout": 10}
TIGHT = {"ttl": 10, "loop_wait": 1, "retry_timeout": 4}


def missing() -> str | None:
    """What is missing here to make a cluster (a sentence), or None when nothing is."""
    lacking = [name for name in ("patroni", "patronictl") if shutil.which(name) is None]
    lacking += [] if etcd_installed() else ["etcd (etcd-server)"]
    lacking += [] if haproxy_binary() else ["haproxy"]
    lacking += [] if postgres_bin() else ["PostgreSQL"]
    if not lacking and not _etcd_module():
        return "Patroni's etcd client (python3-etcd) does not import: install it"
    return f"not installed: {', '.join(lacking)}" if lacking else None


def postgres_bin() -> Path | None:
    """The newest PostgreSQL installed (its bin directory), as devtools/postgres.py uses."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


def _etcd_module() -> bool:
    """Whether Patroni's own Python imports its etcd3 store module (it needs python3-etcd)."""
    patroni = shutil.which("patroni")
    if patroni is None:
        return False
    with open(patroni, "rb") as script:
        first = script.readline().decode(errors="replace")
    python = first[2:].strip().split()[0] if first.startswith("#!") else "python3"
    found = subprocess.run([python, "-c", "import patroni.dcs.etcd3"], capture_output=True)
    return found.returncode == 0


@dataclass
class Member:
    """One Patroni member: its name, PostgreSQL and REST ports, and directory (data, configuration, log)."""

    name: str
    port: int
    rest_port: int
    dir: Path
    proc: subprocess.Popen | None = None

    @property
    def config(self) -> Path:
        return self.dir / "patroni.yml"

    @property
    def data(self) -> Path:
        return self.dir / "data"

    def postmaster(self) -> int | None:
        """The process id of its PostgreSQL server, if it runs (by its postmaster.pid)."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
            os.kill(pid, 0)
        except (FileNotFoundError, ValueError, IndexError, ProcessLookupError):
            return None
        return pid

    def postgres_processes(self) -> list[int]:
        """Every process of its PostgreSQL server: the postmaster (found by its data directory on its command
        line, even without a postmaster.pid) and its children."""
        found = subprocess.run(["pgrep", "-f", "--", f"-D {self.data}"], capture_output=True, text=True).stdout
        pids = [int(pid) for pid in found.split() if _program(int(pid)) == "postgres"]
        for pid in list(pids):
            children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
            pids += [int(child) for child in children]
        return pids


class Cluster:
    """etcd, ``size`` Patroni members and HAProxy, on free loopback ports in temporary directories.

    ``synchronous``: Patroni's ``synchronous_mode`` (the default of deploy/patroni/patroni.yml); off, replication is
    asynchronous (for comparison).  ``timings``: :data:`TIGHT` or :data:`DEFAULTS`.  ``fsync``: make commits
    durable (benchmarks); the tests kill processes, not the machine, and run without.
    """

    def __init__(self, size: int = 2, synchronous: bool = True, timings: dict | None = None, fsync: bool = False):
        self.synchronous, self.timings, self.fsync = synchronous, timings or TIGHT, fsync
        self.dir = Path(tempfile.mkdtemp(prefix="melo-patroni-"))
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self.etcd = Etcd()
        # PostgreSQL and Patroni start again on their ports (a rejoin): ports no other test gets meanwhile.
        self.members = [
            Member(f"pg{n + 1}", steady_port(), steady_port(), self.dir / f"pg{n + 1}") for n in range(size)
        ]
        self.primary_port, self.replica_port = steady_port(), steady_port()
        self.haproxy: subprocess.Popen | None = None
        self._held: list[int] = []  # WAL senders stopped by hold_replication

    # -- starting and stopping -----------------------------------------------------------------------------------

    def start(self, timeout: float = 120) -> None:
        """Start etcd, every member (the first to take the lock makes the cluster, the others copy it) and HAProxy;
        return once the leader is reached through HAProxy and every replica streams (one of them synchronous)."""
        self.etcd.start()
        for member in self.members:
            member.dir.mkdir()
            member.config.write_text(yaml.safe_dump(self._config(member), sort_keys=False))
            if self.as_user:
                shutil.chown(self.dir, "postgres")
                shutil.chown(member.dir, "postgres")
                shutil.chown(member.config, "postgres")
            self.start_member(member)
        self._start_haproxy()
        self.wait_healthy(timeout)

    def start_member(self, member: Member) -> None:
        """Start ``member``'s Patroni (in a process group of its own), which starts its PostgreSQL.  It runs in the
        member's directory, not the caller's: run as root from a directory the postgres user cannot enter (a clone
        in a home directory, mode 700), Patroni's start of PostgreSQL (multiprocessing, which changes to the
        parent's working directory) died on it, and the cluster never came up."""
        with open(member.dir / "patroni.log", "ab") as log:
            member.proc = subprocess.Popen(
                [*self.as_user, "patroni", str(member.config)],
                cwd=member.dir,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )

    def stop(self) -> None:
        """Stop everything at once and remove the directories: PostgreSQL by an immediate shutdown, then kill -9
        of whatever of it is left after 10 s."""
        if self.haproxy is not None:
            self.haproxy.kill()
            self.haproxy.wait(10)
        for member in self.members:  # Patroni first (it would start PostgreSQL again), then PostgreSQL
            if member.proc is not None and member.proc.poll() is None:
                os.killpg(member.proc.pid, signal.SIGKILL)
                member.proc.wait(10)
        for sender in self._held:
            _signal(sender, signal.SIGKILL)
        for member in self.members:
            for pid in member.postgres_processes()[:1]:  # the postmaster: its processes go with it
                _signal(pid, signal.SIGQUIT)
        deadline = time.monotonic() + 10
        while any(m.postgres_processes() for m in self.members) and time.monotonic() < deadline:
            time.sleep(0.05)
        for member in self.members:
            for pid in member.postgres_processes():
                _signal(pid, signal.SIGKILL)
        self.etcd.remove()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _config(self, member: Member) -> dict:
        """deploy/patroni/patroni.yml for ``member``: its name, loopback addresses and directory, this cluster's
        etcd and timings, trust on loopback (no passwords in tests)."""
        config = copy.deepcopy(yaml.safe_load((DEPLOY / "patroni" / "patroni.yml").read_text()))
        config["scope"], config["name"] = self.dir.name, member.name
        rest = f"127.0.0.1:{member.rest_port}"
        config["restapi"] = {"listen": rest, "connect_address": rest}
        config["etcd3"] = {"hosts": self.etcd.address}
        dcs = config["bootstrap"]["dcs"]
        dcs.update(self.timings)
        dcs["synchronous_mode"] = self.synchronous
        pg = config["postgresql"]
        pg["listen"] = pg["connect_address"] = f"127.0.0.1:{member.port}"
        pg["data_dir"], pg["pgpass"] = str(member.data), str(member.dir / "pgpass")
        pg["bin_dir"] = str(postgres_bin())  # the version installed here (the example names one)
        pg["pg_hba"] = ["local all all trust"] + [f"host {db} all 127.0.0.1/32 trust" for db in ("replication", "all")]
        pg["parameters"]["unix_socket_directories"] = str(member.dir)
        if not self.fsync:
            pg["parameters"]["fsync"] = "off"
        return config

    def _start_haproxy(self) -> None:
        path = self.dir / "haproxy.cfg"
        path.write_text(self.haproxy_config())
        with open(self.dir / "haproxy.log", "ab") as log:
            command = [str(haproxy_binary()), "-db", "-f", str(path)]
            self.haproxy = subprocess.Popen(command, cwd=self.dir, stdout=log, stderr=log)

    def haproxy_config(self) -> str:
        """deploy/haproxy.cfg with this cluster's ports: the primary on ``primary_port``, the replicas on
        ``replica_port``, a ``server`` line for each member in each."""
        binds = iter([self.primary_port, self.replica_port])
        out: list[str] = []
        for line in (DEPLOY / "haproxy.cfg").read_text().splitlines():
            if line.strip().startswith("bind "):
                out.append(re.sub(r"bind \S+", f"bind 127.0.0.1:{next(binds)}", line))
            elif line.strip().startswith("server "):
                if not out[-1].strip().startswith("server "):
                    indent = line[: len(line) - len(line.lstrip())]
                    options = line.split(maxsplit=3)[3]  # "check port 8008"
                    for m in self.members:
                        rest = re.sub(r"port \d+", f"port {m.rest_port}", options)
                        out.append(f"{indent}server {m.name} 127.0.0.1:{m.port} {rest}")
            else:
                out.append(line)
        return "\n".join(out) + "\n"

    # -- what the cluster says ------------------------------------------------------------------------------------

    def state(self) -> list[dict]:
        """Each member as Patroni's REST API lists it (``GET /cluster``): name, role, state, lag, … (asked of
        the first member that answers)."""
        for member in self.members:
            try:
                return httpx.get(f"http://127.0.0.1:{member.rest_port}/cluster", timeout=1).json()["members"]
            except (httpx.HTTPError, ValueError, KeyError):
                continue
        return []

    def leader(self) -> str | None:
        """The name of the member that leads and runs, if one does."""
        for m in self.state():
            if m["role"] in ("leader", "master", "primary") and m["state"] == "running":
                return m["name"]
        return None

    def member(self, name: str) -> Member:
        """The member named ``name``."""
        return next(m for m in self.members if m.name == name)

    def patronictl_list(self) -> str:
        """``patronictl list``: the members, their roles, states, timelines and lag, as an operator sees them."""
        config = self.members[0].config
        return subprocess.run(["patronictl", "-c", str(config), "list"], capture_output=True, text=True).stdout

    # -- waiting ------------------------------------------------------------------------------------------------

    def wait_leader(self, other_than: str | None = None, timeout: float = 60) -> str:
        """Wait for a running leader (not ``other_than``) that HAProxy sends connections to; its name."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            name = self.leader()
            if name is not None and name != other_than and self._writable():
                return name
            time.sleep(0.1)
        raise TimeoutError(f"no new leader within {timeout} s:\n{self.patronictl_list()}\n{self.logs()}")

    def wait_healthy(self, timeout: float = 120) -> None:
        """Wait until a leader is reached through HAProxy and every other member streams from it (one of them
        as the synchronous standby, in synchronous mode)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            members = self.state()
            standbys = [m for m in members if m["role"] in ("replica", "sync_standby")]
            running = all(m["state"] in ("running", "streaming") for m in standbys)
            sync = any(m["role"] == "sync_standby" for m in members) or not self.synchronous
            if len(standbys) == len(self.members) - 1 and running and sync and self.leader() and self._writable():
                return
            time.sleep(0.2)
        raise TimeoutError(f"the cluster is not healthy within {timeout} s:\n{self.patronictl_list()}\n{self.logs()}")

    def logs(self, lines: int = 40) -> str:
        """The last lines of each member's log (Patroni's and PostgreSQL's), HAProxy's and etcd's, for a
        failure's message."""
        out = []
        logs = [(m.name, m.dir / "patroni.log") for m in self.members]
        for name, log in [*logs, ("haproxy", self.dir / "haproxy.log"), ("etcd", self.etcd.log)]:
            text = log.read_text(errors="replace").splitlines() if log.exists() else []
            tail = [line for line in text if not _NOISE.search(line)][-lines:]
            out.append(f"--- {name}\n" + "\n".join(tail))
        return "\n".join(out)

    def _writable(self) -> bool:
        try:
            with psycopg.connect(self.url(), connect_timeout=1, autocommit=True) as conn:
                return not conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]
        except psycopg.Error:
            return False

    # -- faults -------------------------------------------------------------------------------------------------

    def kill_primary(self, timeout: float = 10) -> str:
        """kill -9 the leader's postmaster (Patroni on that member lives on) and wait until its processes are gone
        (they exit when they see the postmaster dead); the leader's name."""
        name = self.leader()
        assert name is not None, self.patronictl_list()
        processes = self.member(name).postgres_processes()
        assert processes, self.patronictl_list()
        os.kill(processes[0], signal.SIGKILL)
        for sender in self._held:
            _signal(sender, signal.SIGKILL)
        self._held = []
        deadline = time.monotonic() + timeout
        while any(_alive(pid) for pid in processes):
            assert time.monotonic() < deadline, f"the killed primary's processes live on: {processes}"
            time.sleep(0.01)
        return name

    def fail_over(
        self, killed: Callable[[], object] = lambda: None, timeout: float = 60, kills: int = 3
    ) -> tuple[str, str, int]:
        """kill -9 the leader's postmaster until another member leads (:meth:`wait_leader`); the old leader's name,
        the new one's and the kills it took.  Patroni fails a crashed primary over only if its synchronous standby's
        REST API confirms, within 2 s, that it is fit to take over; on a machine too loaded for that it restarts the
        primary in place instead (crash recovery: nothing acknowledged is lost), and the primary is killed again.
        ``killed`` is called once the first kill's processes are gone."""
        old = self.leader()
        assert old is not None, self.patronictl_list()
        for kill in range(1, kills + 1):
            assert self.kill_primary() == old
            if kill == 1:
                killed()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                name = self.leader()
                if name is not None and self._writable():
                    if name != old:
                        return old, name, kill
                    break  # restarted in place
                time.sleep(0.1)
            else:
                raise TimeoutError(f"no leader within {timeout} s:\n{self.patronictl_list()}\n{self.logs()}")
        raise TimeoutError(f"{old} restarted in place after {kills} kills:\n{self.patronictl_list()}\n{self.logs()}")

    def switch_over(self, timeout: float = 60) -> tuple[str, str]:
        """``patronictl switchover``, as an operator hands the primary over before maintenance: the leader stops
        cleanly once its synchronous standby has everything, and the standby is promoted.  The old leader's name
        and the new one's, once HAProxy sends connections to the new one."""
        old = self.leader()
        candidate = next((m["name"] for m in self.state() if m["role"] == "sync_standby"), None)
        assert old is not None and candidate is not None, self.patronictl_list()
        command = ["patronictl", "-c", str(self.members[0].config), "switchover", "--force"]
        done = subprocess.run([*command, "--leader", old, "--candidate", candidate], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        return old, self.wait_leader(other_than=old, timeout=timeout)

    def kill_host(self) -> str:
        """kill -9 the leader's Patroni and PostgreSQL together, as when its machine dies: the others wait for its
        leader key to expire (``ttl``) before one takes over.  :meth:`start_member` brings it back.  Its name."""
        name = self.kill_primary()
        member = self.member(name)
        assert member.proc is not None
        os.killpg(member.proc.pid, signal.SIGKILL)
        member.proc.wait(10)
        return name

    def hold_replication(self) -> None:
        """SIGSTOP the leader's WAL senders: its standbys fall behind (and, in synchronous mode, its commits wait).
        :meth:`kill_primary` kills them with it, so what they held back never reaches a standby."""
        pid = self.member(self.leader() or "").postmaster()
        assert pid is not None
        found = subprocess.run(["pgrep", "-P", str(pid), "-f", "walsender"], capture_output=True, text=True)
        self._held = [int(sender) for sender in found.stdout.split()]
        for sender in self._held:
            os.kill(sender, signal.SIGSTOP)

    def set_synchronous(self, synchronous: bool, timeout: float = 60) -> None:
        """Turn Patroni's synchronous mode on or off (``PATCH /config``, as ``patronictl edit-config`` does), and
        wait until the primary has (or has no) synchronous standby."""
        leader = self.member(self.wait_leader())
        config = f"http://127.0.0.1:{leader.rest_port}/config"
        answer = httpx.patch(config, json={"synchronous_mode": synchronous}, timeout=5)
        assert answer.status_code == 200, f"PATCH /config: {answer.status_code} {answer.text}"
        self.synchronous = synchronous
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with psycopg.connect(self.url(), autocommit=True) as conn:
                names = conn.execute("SHOW synchronous_standby_names").fetchone()[0]
            standby = any(m["role"] == "sync_standby" for m in self.state())
            if bool(names) == synchronous and standby == synchronous:
                return
            time.sleep(0.2)
        raise TimeoutError(f"synchronous_mode {synchronous} not in effect within {timeout} s")

    # -- connecting ---------------------------------------------------------------------------------------------

    def url(self, database: str = "postgres") -> str:
        """The URL of ``database`` on the primary, through HAProxy."""
        return f"postgresql://postgres@127.0.0.1:{self.primary_port}/{database}"

    def replica_url(self, database: str = "postgres") -> str:
        """The URL of ``database`` on the replicas, through HAProxy."""
        return f"postgresql://postgres@127.0.0.1:{self.replica_port}/{database}"

    def create_database(self, name: str) -> str:
        """Create database ``name`` on the primary; its URL through HAProxy."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not: it is dead, not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


# Lines that would push the decisive ones out of a failure's message: Patroni's idle loop, and the tracebacks its
# REST API logs each time HAProxy's health check hangs up before reading the answer.
_NOISE = re.compile(
    r"INFO: no action\. |^  File |^    |Traceback|ConnectionResetError|BrokenPipeError|Exception happened"
)


def _signal(pid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to ``pid`` unless it is gone already."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _program(pid: int) -> str:
    """The name of the program process ``pid`` runs ("" if it is gone or not ours to see)."""
    try:
        return Path(os.readlink(f"/proc/{pid}/exe")).name
    except OSError:
        return ""
