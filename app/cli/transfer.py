"""The commands that move data in and out: import (games, or a ladder export to restore), export and backup."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path

from sqlalchemy import make_url

from app import storage
from app.analysis import auto, refit_run
from app.backups import service as backups
from app.cli.formats import is_export, parse_games
from app.cli.ladders import ladder_options
from app.cli.terminal import ProgressBar
from app.core.config import get_settings
from app.core.db import Database
from app.domain.access import ladder_for_read
from app.games.apply import import_games
from app.ladders.service import create_ladder
from app.storage.sql import no_cyclic_gc


def cmd_restore(args: argparse.Namespace) -> None:
    start = time.perf_counter()
    db = Database.from_settings(get_settings())
    with no_cyclic_gc(), Path(args.file).open("rb") as lines, db.writing() as session:
        created = backups.restore(session, lines, args.ladder, ProgressBar())
    db.dispose()
    seconds = time.perf_counter() - start
    print(f"restored {args.file} as ladder {created.slug!r} in {seconds:.1f} s: {created.players:,} players, "
          f"{created.games:,} games", file=sys.stderr)  # fmt: skip
    print(json.dumps(created.model_dump(mode="json"), indent=2))


def cmd_export(args: argparse.Namespace) -> None:
    start = time.perf_counter()
    db = Database.from_settings(get_settings())
    out = sys.stdout.buffer if args.output == "-" else Path(args.output).open("wb")  # noqa: SIM115
    games: int | None = None
    try:
        with db.snapshot() as session:
            for chunk in backups.export_lines(session, ladder_for_read(session, args.ladder, fresh=True)):
                out.write(chunk)
                if games is None:  # the first chunk is the header line, which counts the games
                    games = json.loads(chunk)["games"]
    finally:
        if out is not sys.stdout.buffer:
            out.close()
    db.dispose()
    assert games is not None  # export_lines yields the header line first
    seconds = time.perf_counter() - start
    print(f"exported {games:,} games of {args.ladder!r} in {seconds:.1f} s ({games / seconds:,.0f} games/s)",
          file=sys.stderr)  # fmt: skip


def cmd_backup(args: argparse.Namespace) -> None:
    """A consistent copy of the SQLite database while the server runs (SQLite's online backup)."""
    settings = get_settings()
    if not settings.is_sqlite:
        raise SystemExit("melo backup: the database is PostgreSQL; back it up with pg_dump (see the README)")
    target = Path(args.file)
    if target.exists():
        raise SystemExit(f"melo backup: {target} exists already; give a new file")
    if not target.parent.is_dir():
        raise SystemExit(f"melo backup: there is no folder {target.parent}; create it first")
    database = make_url(settings.sqlalchemy_url).database
    if database is None:
        raise SystemExit("melo backup: the database is in memory (sqlite://); there is no file to back up")
    start = time.perf_counter()
    source = sqlite3.connect(database)
    copy = sqlite3.connect(target)
    try:
        with copy:
            source.backup(copy, pages=1024)
    finally:
        copy.close()
        source.close()
    size = target.stat().st_size
    print(f"backed up to {target} ({size / 1e6:,.1f} MB) in {time.perf_counter() - start:.1f} s", file=sys.stderr)


def cmd_import(args: argparse.Namespace) -> None:
    if args.format == "jsonl" and is_export(Path(args.file)):
        cmd_restore(args)
        return
    start = time.perf_counter()
    progress = ProgressBar()
    with no_cyclic_gc():
        games = parse_games(Path(args.file), args.format, progress)
        db = Database.from_settings(get_settings())
        with db.writing() as session:
            ladder = storage.ladders.by_slug(session, args.ladder)
            if ladder is None:  # a new ladder, with the options create-ladder takes
                created = create_ladder(session, ladder_options(args, args.ladder))
                print(f"created ladder {args.ladder!r}; its admin key, shown only now: {created.admin_key}")
                ladder = storage.ladders.by_slug(session, args.ladder)
                assert ladder is not None  # created just above, in this transaction
            import_games(session, ladder, games, progress)
            players, counted = storage.ladders.sizes(session, ladder.id)
        db.dispose()
    seconds = time.perf_counter() - start
    print(
        f"imported {len(games):,} games into {args.ladder!r} in {seconds:.1f} s ({len(games) / seconds:,.0f} games/s);"
        f" it has {players:,} players and {counted:,} games"
    )
    if args.refit:
        _auto_refit(ladder.id, args.ladder)


def _auto_refit(ladder_id: int, slug: str) -> None:
    """The auto refit the import made due, run here, so that a ladder whose history arrives in one import is tuned
    when it ends: its rate choice first (applied at once where it pays), then the guarded refit (mathematics §9)."""
    db = Database.from_settings(get_settings())
    try:
        job_id = auto.record_if_due(db, ladder_id)
        if job_id is None:
            return
        print(f"its log makes auto refit {job_id} due: choosing the rate, then refitting (--no-refit leaves it)")
        bar = ProgressBar()
        refit_run.run_refit(db, ladder_id, job_id, progress=lambda done, total: bar("refitting", done, total))
        with db.reading() as session:
            job = storage.refits.get(session, ladder_id, job_id)
            ladder = storage.ladders.by_id(session, ladder_id)
    finally:
        db.dispose()
    # The job recorded and run above, of the ladder just imported into (only deleting the ladder removes them).
    assert job is not None and ladder is not None
    rate = (job.result or {}).get("rate") or {}
    if rate.get("applied"):
        rule = f"{ladder.rate_rule} rule, eta {ladder.eta:g}" + (
            f", noise {ladder.noise:g} Elo" if ladder.rate_rule == "variance" else f", eta_tau {ladder.eta_tau}"
        )
        said = f"its log chose a new rate ({rule}; log loss {rate['log_loss']:.4f}, "
        said += f"{rate['previous_log_loss']:.4f} before)"
    else:
        said = "its rate was kept (no other predicted its log better by more than the noise)"
    fit = {
        "done": "its refit passed its guard and was applied",
        "rejected": "its refit was not applied (it did not predict the latest games better than the ratings did)",
    }.get(job.status, f"its refit {job.status}: {job.error}")
    print(f"refit {job_id}: {said}; {fit} (GET /v1/ladders/{slug}/refits/{job_id} has its report)")
