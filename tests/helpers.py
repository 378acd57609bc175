"""What the top-level tests share: the schema's reference tables, a large ladder run in a capped process of its
own, and a directory the postgres user may not enter with the processes' working directories and owners.  Imported
by the test modules; no test module imports another."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Tables of no ladder, replicated to every node as they are: the migrations' version, and the slugs (unique
#: across ladders, which a table spread by ladder could not keep; migration 0031).
REFERENCE = {"alembic_version", "ladder_slugs"}

ROOT = Path(__file__).resolve().parent.parent


def run_scale(url: str, players: int, cap_gb: float) -> dict:
    cmd = [sys.executable, "-m", "tests.scale", url, str(players), str(cap_gb)]
    # One BLAS thread: its buffers, reserved per core, would make the cap depend on the machine's cores.
    env = os.environ | {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


AS_ROOT = os.geteuid() == 0


@contextmanager
def private_cwd() -> Iterator[Path]:
    """Run the block in a new directory of mode 700, as in a clone in a home directory: run as root, one the
    postgres user may not enter (asserted, lest the test prove nothing)."""
    folder = Path(tempfile.mkdtemp(prefix="melo-private-"))
    folder.chmod(0o700)
    if AS_ROOT:
        assert not may_enter("postgres", folder), f"the postgres user may enter {folder}: the test would prove nothing"
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(before)
        shutil.rmtree(folder, ignore_errors=True)


def may_enter(user: str, folder: str | Path) -> bool:
    """Whether ``user`` may change to ``folder`` (as root, by ``runuser``)."""
    command = ["sh", "-c", 'cd "$1"', "sh", str(folder)]
    as_user = ["runuser", "-u", user, "--"] if AS_ROOT and user != "root" else []
    return subprocess.run([*as_user, *command], cwd="/", capture_output=True).returncode == 0


def cwd(pid: int) -> Path | None:
    """Process ``pid``'s working directory (None if it is gone)."""
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd"))
    except FileNotFoundError:
        return None


def owner(pid: int) -> str | None:
    """The name of the user process ``pid`` runs as (None if it is gone)."""
    try:
        return pwd.getpwuid(os.stat(f"/proc/{pid}").st_uid).pw_name
    except FileNotFoundError:
        return None


def descendants(pid: int) -> list[int]:
    """The children of process ``pid``, theirs, and so on."""
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    children = [int(child) for child in found]
    return children + [grandchild for child in children for grandchild in descendants(child)]
