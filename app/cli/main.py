"""``melo``'s entry point: parse the command line, open the database and run the command.

Every command opens the database that ``MELO_DATABASE_URL`` (or ``--database``) names, says which on standard
error, and only ``migrate`` and ``serve`` may create one.  A user's mistake (an unknown ladder, a missing file or
folder, a refused change) ends in one line and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy import make_url

from app.cli.analysis import cmd_analyse, cmd_identifiability, cmd_refit
from app.cli.ladders import (
    cmd_create_ladder,
    cmd_keys,
    cmd_ladders,
    cmd_leaderboard,
    cmd_merge,
    cmd_rename,
    cmd_void,
)
from app.cli.parser import build_parser
from app.cli.serve import run_server
from app.cli.transfer import cmd_backup, cmd_export, cmd_import
from app.core.config import Settings, get_settings
from app.core.db import Database
from app.core.errors import Problem
from app.core.migrate import upgrade

#: The commands that may create the database they are pointed at.
CREATING = ("migrate", "serve")


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.database:
        os.environ["MELO_DATABASE_URL"] = args.database  # for this process and the server's workers
        get_settings.cache_clear()
    settings = get_settings()
    _open(settings, args.command)
    if args.command == "serve":
        run_server(args.host, args.port, args.workers)
        return
    if args.command == "backup":  # a copy as it is, whatever its schema
        cmd_backup(args)
        return
    upgrade(settings.sqlalchemy_url)  # an existing database is brought up to date first: `migrate` is only that
    commands = {
        "create-ladder": cmd_create_ladder,
        "import": cmd_import,
        "export": cmd_export,
        "refit": cmd_refit,
        "identifiability": cmd_identifiability,
        "analyse": cmd_analyse,
        "ladders": cmd_ladders,
        "leaderboard": cmd_leaderboard,
        "keys": cmd_keys,
        "void": cmd_void,
        "merge": cmd_merge,
        "rename": cmd_rename,
    }
    if args.command not in commands:  # migrate: done above
        return
    try:
        commands[args.command](args)
    except Problem as exc:  # a refused request: its message, not a traceback
        raise SystemExit(f"melo {args.command}: {exc.detail}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise SystemExit(f"melo {args.command}: {field}: {first['msg']}") from None
    except OSError as exc:  # a file or folder that is not there, not readable or not writable
        raise SystemExit(f"melo {args.command}: {exc.filename or ''}: {exc.strerror}") from None


def _open(settings: Settings, command: str) -> None:
    """Say on standard error which database the command opens; stop if it is not there (only ``migrate`` and
    ``serve`` create one)."""
    url = make_url(settings.sqlalchemy_url)
    shown = url.render_as_string(hide_password=True)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        shown = f"{Path(url.database).resolve()} (SQLite)"
    print(f"melo {command}: database {shown}", file=sys.stderr)
    if command in CREATING or (command == "backup" and url.get_backend_name() != "sqlite"):
        return  # a PostgreSQL backup is pg_dump's: `melo backup` says so
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:" and not Path(url.database).is_file():
            raise SystemExit(
                f"melo {command}: there is no database at {url.database}. Set MELO_DATABASE_URL (or --database) to "
                "yours, or create this one with `melo migrate`."
            )
        return
    try:
        db = Database.from_settings(settings)
        try:
            db.ping()
        finally:
            db.dispose()
    except Exception as exc:
        reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
        raise SystemExit(f"melo {command}: cannot open the database {shown}: {reason}") from None
