"""Event ids per ladder: ``ladder_events.number``, and ``ladders.last_event``, the last number given out.

The event stream's ids were the table's own ids, one sequence for the whole server, so a ladder's ``hello``
showed every other ladder's traffic.  Each ladder now numbers its own events, as it numbers its games, from a
counter on its row (never given out again, even once its events are pruned).  Existing events keep their id as
their number, and every existing ladder's counter starts at the highest id ever given out, so a client's resume
point from before stays exact.  (A downgrade goes back to the table's ids: resume points given out since may then
name other events.)  Season names are put in Unicode's composed form (NFC), as they are now taken.

Revision ID: 0032
Revises: 0031
"""

import unicodedata

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Native ADD COLUMN with a default on both databases: a batch copy of ladder_events on SQLite would lose
    # its AUTOINCREMENT.
    op.add_column("ladder_events", sa.Column("number", sa.BigInteger(), nullable=False, server_default="0"))
    op.add_column("ladders", sa.Column("last_event", sa.BigInteger(), nullable=False, server_default="0"))
    op.execute("UPDATE ladder_events SET number = id")
    op.execute(f"UPDATE ladders SET last_event = {_last_id_given_out()}")
    op.drop_index("ix_ladder_events_ladder_id_id", table_name="ladder_events")
    op.create_index("ix_ladder_events_ladder_id_number", "ladder_events", ["ladder_id", "number"], unique=True)
    _compose_season_names()


def _last_id_given_out() -> int:
    """The highest event id ever given out, pruned events included (the id sequence's position)."""
    bind = op.get_bind()
    highest = bind.execute(sa.text("SELECT coalesce(max(id), 0) FROM ladder_events")).scalar_one()
    if bind.dialect.name == "postgresql":
        sequence = bind.execute(sa.text("SELECT pg_get_serial_sequence('ladder_events', 'id')")).scalar_one()
        if sequence is not None:
            used = bind.execute(sa.text(f"SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {sequence}"))
            highest = max(highest, used.scalar_one())
    else:
        used = bind.execute(sa.text("SELECT seq FROM sqlite_sequence WHERE name = 'ladder_events'")).scalar()
        highest = max(highest, used or 0)
    return int(highest)


def _compose_season_names() -> None:
    """Season names in Unicode's composed form (NFC), as they are taken from now on (one that would then be
    another season's name is left as it is)."""
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT id, ladder_id, name FROM seasons")).all()
    taken = {(ladder_id, name) for _, ladder_id, name in rows}
    for season_id, ladder_id, name in rows:
        composed = unicodedata.normalize("NFC", name)
        if composed != name and (ladder_id, composed) not in taken:
            query = "UPDATE seasons SET name = :name WHERE id = :id AND ladder_id = :ladder_id"
            bind.execute(sa.text(query), {"name": composed, "id": season_id, "ladder_id": ladder_id})
            taken.add((ladder_id, composed))


def downgrade() -> None:
    op.drop_index("ix_ladder_events_ladder_id_number", table_name="ladder_events")
    op.create_index("ix_ladder_events_ladder_id_id", "ladder_events", ["ladder_id", "id"])
    op.drop_column("ladders", "last_event")
    op.drop_column("ladder_events", "number")
