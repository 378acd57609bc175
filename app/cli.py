"""The ``melo`` command line: serve, migrate, ladders, create-ladder, leaderboard, keys, void, merge, rename, import,
export, backup, refit, identifiability, analyse.

Every command opens the database that ``MELO_DATABASE_URL`` (or ``--database``) names, says which on standard
error, and only ``migrate`` and ``serve`` may create one.  A user's mistake (an unknown ladder, a missing file or
folder, a refused change) ends in one line and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import TextIO

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import make_url

from app import storage
from app.analysis import refits, reports
from app.analysis.schemas import INTRANSITIVITY_SCALE, RefitIn
from app.backups import service as backups
from app.core.config import Settings, get_settings
from app.core.db import Database
from app.core.errors import Problem
from app.core.migrate import upgrade
from app.domain.access import ladder_for_read
from app.games import service as games
from app.games.schemas import GameIn
from app.games.service import import_games
from app.ladders import service as ladders
from app.ladders.schemas import KeyCreate, LadderCreate
from app.ladders.service import create_ladder
from app.players import service as players
from app.players.schemas import PlayerPatch
from app.storage.sql import no_cyclic_gc

CHESS_RESULT = {"1-0": (1, 2), "0-1": (2, 1), "1/2-1/2": (1, 1)}


def read_json(path: Path) -> object:
    """A whole JSON file; one that is not JSON (bad syntax or UTF-8, nested too deep) stops the import with where."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SystemExit(f"{path}: {exc.strerror}; nothing was imported") from None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}: not JSON ({exc.msg}, column {exc.colno})"
        raise SystemExit(f"{path}: {where}; nothing was imported") from None
    except ValueError as exc:  # not UTF-8, a number too long
        raise SystemExit(f"{path}: not JSON ({exc}); nothing was imported") from None
    except RecursionError:
        raise SystemExit(f"{path}: not JSON this import reads: nested too deep; nothing was imported") from None


def read_games(path: Path, fmt: str) -> list[dict]:
    """Games in the API's JSON shape from one of the sample formats in tests/data."""
    data = read_json(path)
    try:
        return _sample_games(data, fmt)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise SystemExit(
            f"{path}: not in the {fmt} format ({type(exc).__name__}: {exc}); nothing was imported"
        ) from None


def _sample_games(data, fmt: str) -> list[dict]:
    if fmt == "chess":  # [white, black, "1-0" | "0-1" | "1/2-1/2"]; white moves first
        return [
            {"sides": [{"players": [w], "rank": CHESS_RESULT[r][0]}, {"players": [b], "rank": CHESS_RESULT[r][1]}]}
            for w, b, r in data
        ]
    if fmt == "football":  # team1 plays at home
        return [
            {
                "sides": [
                    {"players": [m["team1"].replace("/", "-")], "score": m["score"]["ft"][0]},
                    {"players": [m["team2"].replace("/", "-")], "score": m["score"]["ft"][1]},
                ],
                "played_at": m["date"] + "T00:00:00Z",
            }
            for m in data["matches"]
            if "score" in m
        ]
    if fmt == "teams":  # free-for-all of ad-hoc teams; higher outcome = better finish
        return [
            {
                "sides": [
                    {"players": team, "score": score} for team, score in zip(g["players"], g["outcomes"], strict=True)
                ]
            }
            for g in data["interactions"]
        ]
    raise SystemExit(f"unknown format {fmt!r}")


def parse_games(path: Path, fmt: str, progress: Callable[[str, int, int], None]) -> list[GameIn]:
    """Validated games; the first invalid one stops the import with its line (or index) and field."""
    adapter = TypeAdapter(GameIn)
    if fmt == "jsonl":
        items = path.read_bytes().splitlines()
        validate, where = adapter.validate_json, "line"
    else:
        items = read_games(path, fmt)
        validate, where = adapter.validate_python, "game"
    games = []
    for n, item in enumerate(items, start=1):
        if fmt == "jsonl" and not item.strip():
            continue
        try:
            games.append(validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "game"
            raise SystemExit(f"{path}: {where} {n}: {field}: {first['msg']}; nothing was imported") from None
        if n % 10_000 == 0 or n == len(items):
            progress("reading", n, len(items))
    return games


class ProgressBar:
    """One line per stage on stderr: a bar, counts and rate (redrawn on a terminal, written once when done in a
    log or a pipe)."""

    def __init__(self, out: TextIO = sys.stderr, width: int = 30) -> None:
        self.out, self.width = out, width
        self.stage, self.start = "", time.perf_counter()
        self.last = self.start

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if stage != self.stage:  # stages follow one another: this one began when the one before last reported
            self.stage, self.start = stage, self.last
        self.last = now
        if done < total and not self.out.isatty():  # in a log, one line per finished stage
            return
        filled = self.width * done // max(total, 1)
        rate = done / max(now - self.start, 1e-6)
        bar = "#" * filled + "." * (self.width - filled)
        start = "\r" if self.out.isatty() else ""
        self.out.write(f"{start}{stage:<8} [{bar}] {done:,}/{total:,}  {rate:,.0f}/s")
        if done >= total:
            self.out.write("\n")
        self.out.flush()


def is_export(path: Path) -> bool:
    """Whether the file starts with the header line of a ladder export (a first line that is not JSON is left to
    the import of games, which names it)."""
    try:
        with path.open("rb") as lines:
            first = next((line for line in lines if line.strip()), b"")
    except OSError as exc:
        raise SystemExit(f"{path}: {exc.strerror}; nothing was imported") from None
    try:
        head = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(head, dict) and "melo_export" in head


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
    games = None
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
    start = time.perf_counter()
    source = sqlite3.connect(make_url(settings.sqlalchemy_url).database)
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
                created = create_ladder(session, _ladder_options(args, args.ladder))
                print(f"created ladder {args.ladder!r}; its admin key, shown only now: {created.admin_key}")
                ladder = storage.ladders.by_slug(session, args.ladder)
            import_games(session, ladder, games, progress)
            players, counted = storage.ladders.sizes(session, ladder.id)
        db.dispose()
    seconds = time.perf_counter() - start
    print(
        f"imported {len(games):,} games into {args.ladder!r} in {seconds:.1f} s ({len(games) / seconds:,.0f} games/s);"
        f" it has {players:,} players and {counted:,} games"
    )


def _ladder_options(args: argparse.Namespace, slug: str) -> LadderCreate:
    data = LadderCreate(
        slug=slug,
        k=args.k,
        eta=args.eta,
        auto_create_players=True,
        auto_refit=args.auto_refit,
        case_insensitive_keys=args.case_insensitive_keys,
    )
    return data.model_copy(update={"eta_tau": None}) if args.constant_eta else data


def cmd_create_ladder(args: argparse.Namespace) -> None:
    data = _ladder_options(args, args.slug)
    db = Database.from_settings(get_settings())
    with db.writing() as session:
        created = create_ladder(session, data)
    print(json.dumps(created.model_dump(mode="json"), indent=2))


def table(headers: list[str], rows: list[list]) -> str:
    """A plain text table, numbers to 4 decimals."""
    cells = [[f"{v:.4f}" if isinstance(v, float) else str(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[n]) for r in cells)) for n, h in enumerate(headers)]

    def line(values):
        return "  ".join(v.rjust(w) if n else v.ljust(w) for n, (v, w) in enumerate(zip(values, widths, strict=True)))

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in cells)])


def cmd_refit(args: argparse.Namespace) -> None:
    db = Database.from_settings(get_settings())
    params = RefitIn(
        l2=None if args.choose_l2 else args.l2,
        restarts=args.restarts,
        holdout=args.holdout,
        select_k=args.select_k,
        eta=args.eta,
        replay_k=args.replay_k,
        seed=args.seed,
    )
    with db.writing() as session:
        job = refits.start_refit(session, ladder_for_read(session, args.ladder, fresh=True), params)
    bar = ProgressBar()
    try:
        refits.run_refit(db, job.ladder_id, job.id, progress=lambda done, total: bar("fitting", done, total))
    except ValueError as exc:
        raise SystemExit(f"refit {job.id}: {exc}") from None
    with db.reading() as session:
        job = storage.refits.get(session, job.ladder_id, job.id)
    if job.status == "failed":
        raise SystemExit(f"refit {job.id}: {job.error}")
    result = job.result
    print(f"refit {job.id}: k = {result['k']}, {result['games']:,} games, {result['players']:,} players, "
          f"{result['seconds']:.1f} s, restarts agree on P to {result['restart_max_abs_dp']:.2g}")  # fmt: skip
    if result["k_selection"]:
        print(
            "\nheld-out log loss by k (0 = Elo; matchups held out; the smallest k within one standard error of the "
            "best is chosen)\n"
            + table(
                ["k", "log loss", "std. error vs best"],
                [[r["k"], r["heldout_log_loss"], r.get("standard_error", 0.0)] for r in result["k_selection"]],
            )
        )
    if result["l2_selection"]:
        rows = [[r["l2"], r["heldout_log_loss"]] for r in result["l2_selection"]]
        print(f"\nheld-out log loss by λ (chosen {result['l2']})\n" + table(["λ", "log loss"], rows))
    if result["heldout"]:
        rows = [[name, m["log_loss"], m["brier"], m["accuracy"]] for name, m in result["heldout"].items()]
        print("\nheld-out games\n" + table(["ratings", "log loss", "brier", "accuracy"], rows))
    if result.get("heldout_note"):
        print(f"\nnothing held out: {result['heldout_note']}")
    found = result["identifiability"]
    counts = found.get("counts") or {"not_comparable": len(found["not_comparable"])}  # lists stored whole before 0021
    not_comparable = counts["not_comparable"]
    print(f"\nidentifiable: {'yes' if found['unique'] else 'no'}; not comparable: {not_comparable:,}")
    if args.apply:
        with db.writing() as session:
            ladder = ladder_for_read(session, args.ladder, fresh=True)
            checkpoint = refits.apply_refit(session, ladder, storage.refits.get(session, ladder.id, job.id))
        print(f"applied: checkpoint {checkpoint.id} after game {checkpoint.after_game}, "
              f"{checkpoint.replayed_games} later games replayed")  # fmt: skip


def cmd_identifiability(args: argparse.Namespace) -> None:
    db = Database.from_settings(get_settings())
    with db.snapshot() as session:
        report = reports.identifiability(session, ladder_for_read(session, args.ladder), ratings=args.ratings)
    print(f"unique maximum-likelihood advantage matrix: {'yes' if report.unique else 'no'}")
    print(f"clique: {', '.join(report.clique) or 'none'}")
    print(f"comparable: {len(report.comparable)}; strongly connected components: {len(report.components)}")
    if report.not_comparable:
        print("\n" + table(["player", "why not"], [[row.key, row.reason] for row in report.not_comparable]))


def cmd_analyse(args: argparse.Namespace) -> None:
    db = Database.from_settings(get_settings())
    with db.snapshot() as session:
        ladder = ladder_for_read(session, args.ladder)
        intrans = reports.intransitivity(session, ladder)
        form = reports.canonical(session, ladder, limit=2**62)  # every player: the top ones are ranked below
    print(f"intransitivity {intrans.measure:.3f}: transitive {intrans.transitive_norm:.3f}, "
          f"cyclic {intrans.cyclic_norm:.3f}\n({INTRANSITIVITY_SCALE})")  # fmt: skip
    if intrans.empirical:
        print(f"from the win rates of {intrans.empirical['pairs']} pairs: {intrans.empirical['measure']:.3f}")
    rows = [[n + 1, b.kind, b.sigma, b.share] for n, b in enumerate(form.blocks)]
    print("\ndiscs\n" + table(["disc", "kind", "sigma", "share"], rows))
    ranked = sorted((p for p in form.players if p.strength is not None), key=lambda p: -p.strength)
    if ranked:
        top = [[p.key, p.strength, p.consistency] for p in ranked[: args.top]]
        print(f"\ntop {len(top)} by disc strength\n" + table(["player", "u/v", "v"], top))


def _ladder(session, slug: str):
    """The ladder as it is now (one line and exit 1 if there is none)."""
    return ladder_for_read(session, slug, fresh=True)


def cmd_ladders(args: argparse.Namespace) -> None:
    db = Database.from_settings(get_settings())
    with db.reading() as session:
        rows = []
        for ladder in storage.ladders.page_of_ladders(session, None, None, private=True):
            players, games = storage.ladders.sizes(session, ladder.id)
            rows.append([ladder.slug, ladder.name or "", ladder.k, players, games, "yes" if ladder.private else "no"])
    db.dispose()
    print(table(["ladder", "name", "k", "players", "games", "private"], rows) if rows else "no ladders yet")


def cmd_leaderboard(args: argparse.Namespace) -> None:
    db = Database.from_settings(get_settings())
    with db.snapshot() as session:
        ladder = _ladder(session, args.ladder)
        held = storage.read_model.current_table(session, ladder)
        page = json.loads(players.leaderboard(held, ladder, args.by, max(1, min(args.limit, 1000)), None, False))
    db.dispose()
    rows = [
        [row["rank"] or "–", row["key"], row["name"] or "", round(row["elo"]), row["games"],
         f"{row['wins']}/{row['draws']}/{row['losses']}", "provisional" if row["provisional"] else ""]
        for row in page["items"]
    ]  # fmt: skip
    headers = ["rank", "player", "name", "elo", "games", "W/D/L", ""]
    print(table(headers, rows) if rows else f"no players in {args.ladder!r} yet")


def cmd_keys(args: argparse.Namespace) -> None:
    db = Database.from_settings(get_settings())
    if args.action == "list":
        with db.reading() as session:
            found = ladders.list_keys(session, _ladder(session, args.ladder), None, None).items
        rows = [
            [k.id, k.name, k.role, _when(k.created_at), _when(k.last_used_at), _when(k.expires_at),
             "revoked" if k.revoked_at else ""]
            for k in found
        ]  # fmt: skip
        print(table(["id", "name", "role", "created", "last used", "expires", ""], rows))
    elif args.action == "create":
        if not args.target:
            raise SystemExit("melo keys: create needs the new key's name: melo keys LADDER create NAME --role ROLE")
        with db.writing() as session:
            created = ladders.create_key(
                session, _ladder(session, args.ladder), KeyCreate(name=args.target, role=args.role)
            )
        print(f"key {created.id} ({created.role}), shown only now: {created.key}")
    else:
        if not (args.target and args.target.isascii() and args.target.isdigit()):
            raise SystemExit("melo keys: revoke needs the key's id (see `melo keys LADDER`)")
        with db.writing() as session:
            revoked = ladders.revoke_key(session, _ladder(session, args.ladder), int(args.target))
        print(f"key {revoked.id} ({revoked.name!r}) revoked")
    db.dispose()


def _when(moment) -> str:
    return "never" if moment is None else moment.strftime("%Y-%m-%d %H:%M")


def cmd_void(args: argparse.Namespace) -> None:
    db = Database.from_settings(get_settings())
    voided = db.write(
        lambda session: games.void_game(session, _ladder(session, args.ladder), args.game, "cli", args.reason)
    )
    db.dispose()
    print(f"game {voided['id']} of {args.ladder!r} voided; the later games it touched were replayed")


def cmd_merge(args: argparse.Namespace) -> None:
    db = Database.from_settings(get_settings())
    db.write(lambda session: players.merge_players(session, _ladder(session, args.ladder), args.source, args.into))
    db.dispose()
    print(f"{args.source!r} merged into {args.into!r} in {args.ladder!r}")


def cmd_rename(args: argparse.Namespace) -> None:
    db = Database.from_settings(get_settings())
    patch = PlayerPatch(name=args.name)
    db.write(lambda session: players.change_player(session, _ladder(session, args.ladder), args.key, patch))
    db.dispose()
    print(f"{args.key!r} of {args.ladder!r} is now called {args.name!r}")


#: The server's logs: one JSON line per request on standard output (``melo.access``), the rest on standard error.
LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "line": {"format": "%(message)s"},
        "default": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "handlers": {
        "access": {"class": "logging.StreamHandler", "formatter": "line", "stream": "ext://sys.stdout"},
        "default": {"class": "logging.StreamHandler", "formatter": "default", "stream": "ext://sys.stderr"},
    },
    "loggers": {
        "melo.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
        "melo": {"handlers": ["default"], "level": "INFO", "propagate": False},
        "uvicorn": {"handlers": ["default"], "level": "INFO", "propagate": False},
    },
}


def run_server(host: str, port: int, workers: int) -> None:
    """uvicorn with the service's logs; several workers share their metrics through a fresh directory."""
    import uvicorn

    if workers > 1 and "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="melo-metrics-")
    uvicorn.run("app.main:app", host=host, port=port, workers=workers, access_log=False, log_config=LOG_CONFIG)


def _ladder_arguments(parser: argparse.ArgumentParser, note: str = "") -> None:
    parser.add_argument("--k", type=int, default=LadderCreate.model_fields["k"].default, help="discs" + note)
    parser.add_argument("--eta", type=float, default=LadderCreate.model_fields["eta"].default, help="η" + note)
    parser.add_argument("--constant-eta", action="store_true", help="do not shrink η with games played" + note)
    parser.add_argument(
        "--no-auto-refit", dest="auto_refit", action="store_false", help="never refit in the background" + note
    )
    parser.add_argument(
        "--exact-keys",
        dest="case_insensitive_keys",
        action="store_false",
        help='match player keys exactly ("Ann" and "ann" two players; default: one, stored as "ann")' + note,
    )


#: The commands that may create the database they are pointed at.
CREATING = ("migrate", "serve")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="melo", description="mElo rating service")
    parser.add_argument("--version", action="version", version=f"melo {version('melo')}")
    parser.add_argument(
        "--database", metavar="URL", help="the database to open (default: MELO_DATABASE_URL, else ./data/melo.db)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP server")
    serve.add_argument("--host", default="127.0.0.1", help="0.0.0.0: every interface (the office network)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1)
    sub.add_parser("migrate", help="bring the database schema up to date")
    create = sub.add_parser("create-ladder", help="create a ladder and print its admin key")
    create.add_argument("slug")
    _ladder_arguments(create)
    imp = sub.add_parser(
        "import",
        help="import games into a ladder (created if it does not exist), in order, all or nothing; or restore an "
        "export (from `melo export` or GET …/export) as a new ladder LADDER",
    )
    imp.add_argument("ladder")
    imp.add_argument("file")
    imp.add_argument("--format", choices=["jsonl", "chess", "football", "teams"], default="jsonl")
    _ladder_arguments(imp, " (a ladder the import creates)")
    export = sub.add_parser("export", help="write a ladder's export (NDJSON), to restore with `melo import`")
    export.add_argument("ladder")
    export.add_argument("--output", "-o", default="-", help="file to write (default: standard output)")
    backup = sub.add_parser("backup", help="copy the SQLite database to FILE while the server runs")
    backup.add_argument("file")
    refit = sub.add_parser("refit", help="maximum-likelihood refit of a ladder's log, with a report")
    refit.add_argument("ladder")
    refit.add_argument("--select-k", type=int, nargs="+", help="choose k among these by held-out loss (0 = Elo)")
    refit.add_argument("--restarts", type=int, default=3)
    refit.add_argument("--holdout", type=float, default=0.2)
    refit.add_argument("--l2", type=float, default=RefitIn.model_fields["l2"].default)
    refit.add_argument("--choose-l2", action="store_true", help="choose λ by held-out loss")
    refit.add_argument("--eta", type=float, help="η of the online rule replayed in the report")
    refit.add_argument("--replay-k", type=int, help="k of the online rule replayed in the report")
    refit.add_argument("--seed", type=int, default=0)
    refit.add_argument("--apply", action="store_true", help="apply the refit as a checkpoint")
    ident = sub.add_parser("identifiability", help="can the results pin down the ratings? (mathematics §10)")
    ident.add_argument("ladder")
    ident.add_argument("--ratings", choices=["current", "refit"], default="current")
    analyse = sub.add_parser("analyse", help="intransitivity and the canonical discs of a ladder (mathematics §12)")
    analyse.add_argument("ladder")
    analyse.add_argument("--top", type=int, default=10)
    sub.add_parser("ladders", help="list the ladders: slug, players, games")
    board = sub.add_parser("leaderboard", help="a ladder's leaderboard")
    board.add_argument("ladder")
    board.add_argument("--by", choices=["hodge", "field", "conservative", "disc"], default="hodge")
    board.add_argument("--limit", type=int, default=20)
    keys = sub.add_parser("keys", help="a ladder's keys: list them, create one, revoke one")
    keys.add_argument("ladder")
    keys.add_argument("action", nargs="?", choices=["list", "create", "revoke"], default="list")
    keys.add_argument("target", nargs="?", help="create: the new key's name; revoke: the key's id")
    keys.add_argument("--role", choices=["read", "write", "admin"], default="write")
    void = sub.add_parser("void", help="void game N of a ladder (its number, as the ladder shows it)")
    void.add_argument("ladder")
    void.add_argument("game", type=int)
    void.add_argument("--reason")
    merge = sub.add_parser("merge", help="merge player FROM into player INTO (their games become INTO's)")
    merge.add_argument("ladder")
    merge.add_argument("source", metavar="FROM")
    merge.add_argument("into", metavar="INTO")
    rename = sub.add_parser("rename", help="give player KEY the display name NAME")
    rename.add_argument("ladder")
    rename.add_argument("key")
    rename.add_argument("name")
    args = parser.parse_args(argv)

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


if __name__ == "__main__":
    main()
