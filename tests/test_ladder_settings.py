"""The ladder's settings are declared once, in :data:`app.core.ladder_settings.SETTINGS`, and every place that
holds them has each of them and no other: the table's columns, ``LadderRow``, ``LadderCreate``, ``LadderPatch`` and
``LadderOut``, with the bounds and descriptions the declaration gives.  A setting added to one and not to the others
fails here, naming what is missing where."""

from __future__ import annotations

from dataclasses import fields
from types import NoneType
from typing import get_args

from app.core.ladder import LadderRow
from app.core.ladder_settings import SETTINGS
from app.ladders.schemas import LadderCreate, LadderOut, LadderPatch
from app.ladders.service import NOT_NULL, null_message
from app.storage.tables import Ladder

#: ``LadderRow``'s fields that are the ladder's state, not settings.
ROW_STATE = {"id", "write_key_hash", "created_at", "version", "reset_version", "rewritten_version", "aliases"}
#: The columns of ``ladders`` that are the ladder's state, not settings (beside ``ROW_STATE``'s, but ``aliases``).
TABLE_STATE = {
    "rate_choice",
    "deleted_at",
    "last_seq",
    "last_event",
    "seat_state",
    "players_count",
    "games_count",
    "comparisons_count",
    "draws",
    "draw_room",
    "field_sum",
    "season_due",
    "history_rewrite",
}
#: What ``LadderOut`` shows beside the settings.
OUT_STATE = {"rate_choice", "created_at", "players", "games", "auto_refit_note"}
#: ``LadderCreate``'s descriptions that quote defaults, given there (app.ladders.schemas).
QUOTING_DEFAULTS = {"eta", "init_offset"}


def _same(have: set[str], want: set[str], where: str) -> None:
    """``where`` has the settings ``want``, and no other setting."""
    missing, unknown = sorted(want - have), sorted(have - want)
    assert not missing and not unknown, (
        f"{where}: missing {missing}; neither a setting nor state (the *_STATE above): {unknown}"
    )


def test_every_setting_is_a_column_and_a_field_of_the_row():
    settings = set(SETTINGS)
    row = {field.name for field in fields(LadderRow)} - ROW_STATE
    _same(row, settings, "LadderRow's fields (app/core/ladder.py)")
    columns = set(Ladder.__table__.columns.keys()) - ROW_STATE - TABLE_STATE
    _same(columns, settings, "the columns of app.storage.tables.Ladder (with a migration)")


def test_the_models_have_every_setting_and_no_other():
    creatable = {name for name, setting in SETTINGS.items() if setting.create}
    _same(set(LadderCreate.model_fields), creatable, "LadderCreate's fields")
    patchable = {name for name, setting in SETTINGS.items() if setting.patch}
    _same(set(LadderPatch.model_fields), patchable, "LadderPatch's fields")
    _same(set(LadderOut.model_fields) - OUT_STATE, set(SETTINGS), "LadderOut's fields")


def _bounds(field) -> dict[str, float]:
    return {
        name: getattr(part, name) for part in field.metadata for name in ("ge", "gt", "le", "lt") if hasattr(part, name)
    }


def test_each_field_is_of_its_setting():
    """Each model's field of a setting takes its bounds and text from the setting of its name (not another's)."""
    for name, setting in SETTINGS.items():
        out = LadderOut.model_fields[name]
        assert (out.description, _bounds(out)) == (setting.description, {}), name
        if setting.create:
            field = LadderCreate.model_fields[name]
            assert _bounds(field) == setting.bounds(), name
            if name not in QUOTING_DEFAULTS:
                assert field.description == (setting.on_create or setting.description), name
        if setting.patch:
            field = LadderPatch.model_fields[name]
            assert (field.default, _bounds(field)) == (None, setting.bounds()), name
            assert field.description == (setting.on_patch or setting.description), name


def test_null_is_a_value_of_the_nullable_settings_only():
    """A nullable setting is one ``LadderOut`` may show as null; a patch's null for any other is a 422 that says
    what it takes."""
    for name, setting in SETTINGS.items():
        assert (NoneType in get_args(LadderOut.model_fields[name].annotation)) == setting.nullable, name
    assert set(NOT_NULL) == {name for name, s in SETTINGS.items() if s.patch and not s.nullable} - {"play"}
    messages = {name: null_message(name) for name in NOT_NULL}
    assert messages["k"] == "must be a whole number from 1 to 8"
    assert messages["private"] == "must be true or false"
    assert messages["rate_rule"] == "must be 'steps' or 'variance'"
    assert messages["drift"] == "must be a number from 0 to 2000"
    assert messages["noise"] == "must be a number from above 0 to 500"
    assert messages["cycles"] == "must be a number from 0 to below 1"
