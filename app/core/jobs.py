"""The job runner: each refit, and each ladder-wide report of a large ladder, runs in a child process of its own,
one at a time per server process (a refit and a report may run side by side).

On Linux each child is forked from a fork server, a process started with the first job that has imported the
jobs' modules once (:func:`preload`): a child starts in milliseconds, where a fresh interpreter spent over two
seconds of CPU importing them (elsewhere each child is a fresh interpreter: macOS's system libraries are not safe
to fork).  The child takes the server's environment as it is when the job starts, for the settings it reads then
(``MELO_*``, ``TZ``); what a module read when the fork server imported it stays as it was then.

In a thread, a refit's fit and its identifiability linear programs would hold the
interpreter lock the request threads need; a child process at a lower CPU priority does
not.  A child that dies marks its job failed; server shutdown stops it, and so does the server's death.

Only the child's working thread is lowered (on Linux a nice value belongs to a
thread): what must not wait behind a low priority, a refit's short write under
the writers' locks, runs in a thread the child keeps at the server's priority
(:func:`at_server_priority`).  A holder of the writer's lock that the
scheduler starves stalls every game post behind it.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from sqlalchemy.exc import OperationalError

from app.core.config import Settings
from app.core.db import Database
from app.core.errors import Problem

logger = logging.getLogger("melo")
T = TypeVar("T")
#: A computation's progress, 0-1, as it goes.
Progress = Callable[[float], None]
_jobs = ThreadPoolExecutor(max_workers=1, thread_name_prefix="melo-refit")


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot: with the pid, names one process for ever); None if
    it is gone or this is not Linux."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner() -> str:
    """This server process as a job's owner: ``host:pid:start-time``."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid()) or 0}"


def owner_gone(name: str | None) -> bool:
    """Whether the server process ``name`` (an :func:`owner`) has stopped: only known for this host's."""
    if name is None:
        return False
    host, pid, started = name.rsplit(":", 2)
    if host != socket.gethostname() or sys.platform != "linux":
        return False
    return _start_time(int(pid)) != started


#: How children start: forked from the fork server on Linux, else each a fresh interpreter.
_context = (
    multiprocessing.get_context("forkserver") if sys.platform == "linux" else multiprocessing.get_context("spawn")
)
#: The process that imported this module: a forked child that finds its own id here imported it itself, so the
#: fork server had not (a module of :func:`preload` that failed to import there, which it does not say).
_IMPORTED_IN = os.getpid()


def preload(modules: list[str]) -> None:
    """The modules whose functions the children run, imported once in the fork server (if it has not started yet)
    rather than in each child."""
    if _context.get_start_method() == "forkserver":
        _context.set_forkserver_preload(modules)


#: A job's child does its linear algebra on one thread (unless the server's environment says otherwise).
#: OpenBLAS's threads wait for one another spinning: a child at a lower priority beside a CPU-bound neighbour lost
#: most of its time to them (an auto refit of 1,000 games took 6 s instead of 0.5 s, and a ladder's predictions
#: then followed how busy its machine was: bench/quality_live.py --load); its work is one core's anyway.
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _one_blas_thread() -> None:
    """:data:`ONE_THREAD` in this process's environment, which the fork server (started with the first job) and a
    spawned child read when they import NumPy; this process's own NumPy, imported already, keeps its threads."""
    for name, value in ONE_THREAD.items():
        os.environ.setdefault(name, value)


_children: set[multiprocessing.process.BaseProcess] = set()
#: In a child, a thread at the server's priority (started before the child lowers its own).
_server_priority: ThreadPoolExecutor | None = None


def at_server_priority(work: Callable[[], T]) -> T:
    """``work()`` at the server's CPU priority: in a job's child, in the thread it kept at that priority (on
    Linux; elsewhere a nice value is the whole process's); in the server, here."""
    if _server_priority is None:
        return work()
    return _server_priority.submit(work).result()


def _lower_priority() -> None:
    """Keep a thread at the server's priority for :func:`at_server_priority`, then lower this one's."""
    global _server_priority
    _server_priority = ThreadPoolExecutor(max_workers=1, thread_name_prefix="melo-write")
    _server_priority.submit(int).result()  # its thread starts now, before the nice value below
    os.nice(10)


class ChildFailed(Exception):
    """A child's work raised, the child died, or it ran out of time; the message says which."""


def run_in_child(
    url: str,
    work: Callable[..., T],
    args: tuple,
    progress: Progress,
    seconds: float,
) -> T:
    """``work(db, progress, *args)`` in a child process (lower priority, dies with this server), on the
    database at ``url``: its result.  ``progress(fraction)`` hears the child's progress as it reports it.
    A :class:`app.core.errors.Problem` the work raises is raised here; anything else it raises, its death, or its
    running longer than ``seconds`` (then it is stopped) raises :class:`ChildFailed`.  ``work`` and ``args``
    must be picklable: a module-level function and plain values."""
    _one_blas_thread()
    receive, send = _context.Pipe(duplex=False)
    child = _context.Process(target=_work_main, args=(url, work, args, send, dict(os.environ)), daemon=True)
    child.start()
    send.close()  # the child's end only: when the child is gone, reading says so
    _children.add(child)
    deadline = time.monotonic() + seconds
    try:
        while True:
            if not receive.poll(max(0.0, deadline - time.monotonic())):
                raise ChildFailed(f"it took longer than {seconds:g} s and was stopped")
            try:
                kind, value = receive.recv()
            except EOFError:
                child.join()
                raise ChildFailed(f"its process exited with code {child.exitcode}") from None
            if kind == "progress":
                progress(value)
            elif kind == "done":
                return value
            elif kind == "problem":  # a refusal (a 4xx), raised here as it was there
                cls, detail, extra = value
                raise cls(detail, **extra)
            else:
                raise ChildFailed(value)
    finally:
        receive.close()
        if child.is_alive():
            child.terminate()
        child.join()
        _children.discard(child)


def _work_main(url: str, work, args: tuple, send, environment: dict[str, str]) -> None:
    _begin(environment)
    db = Database.from_settings(Settings(database_url=url))
    try:
        result = work(db, lambda fraction: send.send(("progress", fraction)), *args)
    except Problem as exc:
        send.send(("problem", (type(exc), exc.detail, exc.extra)))
    except BaseException as exc:  # MemoryError too: the parent reports it
        logger.exception("background work failed")
        send.send(("failed", f"{type(exc).__name__}: {exc}"))
    else:
        send.send(("done", result))
    finally:
        db.dispose()
        send.close()


def submit(
    db: Database,
    ladder_id: int,
    job_id: int,
    run: Callable[[Database, int, int], None],
    fail: Callable[[Database, int, int, str], None],
    finished: Callable[[Database, int, int], None] | None = None,
) -> None:
    """Queue ``run(db, ladder_id, job_id)`` for a child process (the ladder's job ``job_id``); ``fail(db,
    ladder_id, job_id, why)`` records a child that died, and ``finished(db, ladder_id, job_id)`` is called in this
    process once the child is gone."""
    _jobs.submit(_run_child, db, ladder_id, job_id, run, fail, finished)


def stop() -> None:
    """Server shutdown: queued jobs do not start, and the running child is stopped (its job shows as failed)."""
    global _jobs
    old, _jobs = _jobs, ThreadPoolExecutor(max_workers=1, thread_name_prefix="melo-refit")
    old.shutdown(wait=False, cancel_futures=True)
    for child in list(_children):
        child.terminate()


def _run_child(db: Database, ladder_id: int, job_id: int, run, fail, finished) -> None:
    url = db.child_url()
    _one_blas_thread()
    args = (url, ladder_id, job_id, run, fail, dict(os.environ))
    child = _context.Process(target=_child_main, args=args, daemon=True)
    try:
        child.start()
    except Exception as exc:  # the fork server could not start, or died: the job must not stay queued
        logger.exception("starting job %s failed", job_id)
        fail(db, ladder_id, job_id, f"its process could not start: {type(exc).__name__}: {exc}")
        return
    _children.add(child)
    child.join()
    _children.discard(child)
    if child.exitcode != 0:
        fail(db, ladder_id, job_id, f"the refit process exited with code {child.exitcode}")
    if finished is not None:
        try:
            finished(db, ladder_id, job_id)
        except Exception:
            logger.exception("after job %s", job_id)


def _child_main(url: str, ladder_id: int, job_id: int, run, fail, environment: dict[str, str]) -> None:
    _begin(environment)
    db = Database.from_settings(Settings(database_url=url))
    try:
        run(db, ladder_id, job_id)
    except Exception as exc:  # the job's row records the failure
        # A database that went away (a failover) is one line; anything else is a bug, logged with its traceback.
        logger.warning("job %s failed: %s", job_id, exc, exc_info=not isinstance(exc, OperationalError))
        fail(db, ladder_id, job_id, f"{type(exc).__name__}: {exc}")
    finally:
        db.dispose()


def _begin(environment: dict[str, str]) -> None:
    """A child's start: it dies with its server, takes the server's environment as it was when the job started (a
    forked child has the fork server's, from the first job) and lowers its CPU priority."""
    _die_with_server()
    os.environ.clear()
    os.environ.update(environment)
    if hasattr(time, "tzset"):
        time.tzset()
    if _context.get_start_method() == "forkserver" and os.getpid() == _IMPORTED_IN:
        logger.warning("the job modules were not imported in the fork server: each job imports them (seconds)")
    _lower_priority()


def _die_with_server() -> None:
    """A SIGTERM when the server that started this child exits, even by kill -9, so no refit outlives its server.

    A thread waits on this child's end of a pipe whose other end only the server holds (multiprocessing's parent
    sentinel): it reads the end of the pipe when the server is gone.  A forked child's parent is the fork server,
    which lives on while any child does, so the parent's death would not do."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="melo-server-watch", daemon=True).start()
