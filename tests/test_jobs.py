"""The job runner's child processes (app/core/jobs.py): what they take from the server that starts them."""

from __future__ import annotations

import os

import pytest

from app.core import jobs


def _environment_value(_db, _progress, name: str) -> str | None:
    """A child's work: the value of ``name`` in its environment."""
    return os.environ.get(name)


def test_a_jobs_child_reads_the_servers_environment_as_it_is_when_the_job_starts(tmp_path, monkeypatch):
    """On Linux a child is forked from the fork server, whose environment is the server's when its first job
    started: a setting changed since must still reach the next job."""
    url = f"sqlite:///{tmp_path / 'melo.db'}"
    name = "MELO_TEST_JOB_SETTING"
    for value in ("first", "second"):  # the fork server has started by the second at the latest
        monkeypatch.setenv(name, value)
        assert jobs.run_in_child(url, _environment_value, (name,), lambda _: None, 60) == value
    monkeypatch.delenv(name)
    assert jobs.run_in_child(url, _environment_value, (name,), lambda _: None, 60) is None


def _blas_threads_where_numpy_was_imported(_db, _progress) -> str | None:
    """A child's work: OPENBLAS_NUM_THREADS as the process that imported NumPy for it read it (on Linux the fork
    server, its parent; elsewhere the child itself, a fresh interpreter)."""
    if jobs._context.get_start_method() == "forkserver":
        environ = open(f"/proc/{os.getppid()}/environ", "rb").read().split(b"\0")  # noqa: SIM115 (read once)
        found = [item.split(b"=", 1)[1].decode() for item in environ if item.startswith(b"OPENBLAS_NUM_THREADS=")]
        return found[0] if found else None
    return os.environ.get("OPENBLAS_NUM_THREADS")


def test_a_jobs_child_does_its_linear_algebra_on_one_thread(tmp_path):
    """OpenBLAS sizes its thread pool when NumPy is imported: one thread in the process that imported it for the
    child, so a child at a low priority is not starved by its own threads spinning (jobs.ONE_THREAD)."""
    url = f"sqlite:///{tmp_path / 'melo.db'}"
    if os.environ.get("OPENBLAS_NUM_THREADS", "1") != "1":
        pytest.skip("the environment sets OPENBLAS_NUM_THREADS itself: the jobs take it as it is")
    assert jobs.run_in_child(url, _blas_threads_where_numpy_was_imported, (), lambda _: None, 60) == "1"
