"""The ``melo`` argument parser: every command with its arguments, options and help."""

from __future__ import annotations

import argparse
from importlib.metadata import version

from app.analysis.schemas import RefitIn
from app.ladders.schemas import LadderCreate

Commands = argparse._SubParsersAction  # what add_subparsers returns


def _ladder_arguments(parser: argparse.ArgumentParser, note: str = "") -> None:
    parser.add_argument("--k", type=int, default=LadderCreate.model_fields["k"].default, help="discs" + note)
    parser.add_argument("--eta", type=float, help="η (default: the online rule's)" + note)
    parser.add_argument(
        "--constant-eta", action="store_true", help="rate by the step at a constant η, not the variance rule" + note
    )
    parser.add_argument(
        "--no-auto-refit", dest="auto_refit", action="store_false", help="never refit in the background" + note
    )
    parser.add_argument(
        "--exact-keys",
        dest="case_insensitive_keys",
        action="store_false",
        help='match player keys exactly ("Ann" and "ann" two players; default: one, stored as "ann")' + note,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="melo", description="mElo rating service")
    parser.add_argument("--version", action="version", version=f"melo {version('melo')}")
    parser.add_argument(
        "--database", metavar="URL", help="the database to open (default: MELO_DATABASE_URL, else ./data/melo.db)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _server_commands(sub)
    _ladder_commands(sub)
    _transfer_commands(sub)
    _analysis_commands(sub)
    return parser


def _server_commands(sub: Commands) -> None:
    serve = sub.add_parser("serve", help="run the HTTP server")
    serve.add_argument("--host", default="127.0.0.1", help="0.0.0.0: every interface (the office network)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1)
    sub.add_parser("migrate", help="bring the database schema up to date")


def _transfer_commands(sub: Commands) -> None:
    imp = sub.add_parser(
        "import",
        help="import games into a ladder (created if it does not exist), in order, all or nothing; or restore an "
        "export (from `melo export` or GET …/export) as a new ladder LADDER",
    )
    imp.add_argument("ladder")
    imp.add_argument("file")
    imp.add_argument("--format", choices=["jsonl", "chess", "football", "teams"], default="jsonl")
    imp.add_argument(
        "--no-refit",
        dest="refit",
        action="store_false",
        help="leave the ladder's auto refit (and its rate choice), if the import makes one due, to the server",
    )
    _ladder_arguments(imp, " (a ladder the import creates)")
    export = sub.add_parser("export", help="write a ladder's export (NDJSON), to restore with `melo import`")
    export.add_argument("ladder")
    export.add_argument("--output", "-o", default="-", help="file to write (default: standard output)")
    backup = sub.add_parser("backup", help="copy the SQLite database to FILE while the server runs")
    backup.add_argument("file")


def _analysis_commands(sub: Commands) -> None:
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


def _ladder_commands(sub: Commands) -> None:
    create = sub.add_parser("create-ladder", help="create a ladder and print its admin key")
    create.add_argument("slug")
    _ladder_arguments(create)
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
