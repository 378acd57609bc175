"""The commands that study a ladder's log: refit, identifiability, analyse."""

from __future__ import annotations

import argparse

from app import storage
from app.analysis import refit_apply, refit_jobs, refit_run, reports
from app.analysis.schemas import INTRANSITIVITY_SCALE, CanonicalPlayer, RefitIn
from app.cli.terminal import ProgressBar, table
from app.core.config import get_settings
from app.core.db import Database
from app.domain.access import ladder_for_read


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
        job = refit_jobs.start_refit(session, ladder_for_read(session, args.ladder, fresh=True), params)
    bar = ProgressBar()
    try:
        refit_run.run_refit(db, job.ladder_id, job.id, progress=lambda done, total: bar("fitting", done, total))
    except ValueError as exc:
        raise SystemExit(f"refit {job.id}: {exc}") from None
    with db.reading() as session:
        stored = storage.refits.get(session, job.ladder_id, job.id)
    assert stored is not None  # the job started above (only deleting its ladder removes it)
    job = stored
    if job.status == "failed":
        raise SystemExit(f"refit {job.id}: {job.error}")
    result = job.result
    assert result is not None  # not failed: run_refit stored it (only auto refits are ever cancelled)
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
            done = storage.refits.get(session, ladder.id, job.id)
            assert done is not None  # the ladder's job run above
            checkpoint = refit_apply.apply_refit(session, ladder, done)
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


def _strength(player: CanonicalPlayer) -> float:
    assert player.strength is not None  # only the players with a disc strength are ranked
    return player.strength


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
    ranked = sorted((p for p in form.players if p.strength is not None), key=lambda p: -_strength(p))
    if ranked:
        top = [[p.key, p.strength, p.consistency] for p in ranked[: args.top]]
        print(f"\ntop {len(top)} by disc strength\n" + table(["player", "u/v", "v"], top))
