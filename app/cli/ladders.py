"""The commands that list, create and change ladders: ladders, create-ladder, leaderboard, keys, void, merge,
rename."""

from __future__ import annotations

import argparse
import json

from app import storage
from app.cli.terminal import table
from app.core.config import get_settings
from app.core.db import Database
from app.domain.access import ladder_for_read
from app.games.voiding import void_game
from app.ladders import service as ladders
from app.ladders.schemas import KeyCreate, LadderCreate
from app.ladders.service import create_ladder
from app.players.changes import change_player, merge_players
from app.players.leaderboard import leaderboard
from app.players.schemas import PlayerPatch


def ladder_options(args: argparse.Namespace, slug: str) -> LadderCreate:
    """The new ladder ``slug`` with the ladder options on the command line (create-ladder's and import's)."""
    data = LadderCreate(
        slug=slug,
        k=args.k,
        eta=args.eta,
        auto_create_players=True,
        auto_refit=args.auto_refit,
        case_insensitive_keys=args.case_insensitive_keys,
    )
    return data.model_copy(update={"rate_rule": "steps", "eta_tau": None}) if args.constant_eta else data


def cmd_create_ladder(args: argparse.Namespace) -> None:
    data = ladder_options(args, args.slug)
    db = Database.from_settings(get_settings())
    with db.writing() as session:
        created = create_ladder(session, data)
    print(json.dumps(created.model_dump(mode="json"), indent=2))


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
        page = json.loads(leaderboard(held, ladder, args.by, max(1, min(args.limit, 1000)), None, False))
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
    voided = db.write(lambda session: void_game(session, _ladder(session, args.ladder), args.game, "cli", args.reason))
    db.dispose()
    print(f"game {voided['id']} of {args.ladder!r} voided; the later games it touched were replayed")


def cmd_merge(args: argparse.Namespace) -> None:
    db = Database.from_settings(get_settings())
    db.write(lambda session: merge_players(session, _ladder(session, args.ladder), args.source, args.into))
    db.dispose()
    print(f"{args.source!r} merged into {args.into!r} in {args.ladder!r}")


def cmd_rename(args: argparse.Namespace) -> None:
    db = Database.from_settings(get_settings())
    patch = PlayerPatch(name=args.name)
    db.write(lambda session: change_player(session, _ladder(session, args.ladder), args.key, patch))
    db.dispose()
    print(f"{args.key!r} of {args.ladder!r} is now called {args.name!r}")
