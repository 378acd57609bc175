"""The job runner's child processes (app/core/jobs.py): what they take from the server that starts them."""

from __future__ import annotations

import os

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
