"""Event ids per ladder: ``ladder_events.number``, and ``ladders.last_event``, the last number given out.

The event stream's ids were the table's own ids, one sequence for the whole server, so a ladder's ``hello``
showed every other ladder's traffic.  Each ladder now numbers its own events, as it numbers its games, from a
counter on its row (never given out again, even once its events are pruned).  Existing events keep their id as
their number, and every existing ladder's counter starts above the highest id given out, so a client's resume
point from before stays exact.

Revision ID: 0032
Revises: 0031
"""

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
    op.execute("UPDATE ladders SET last_event = (SELECT coalesce(max(id), 0) FROM ladder_events)")
    op.drop_index("ix_ladder_events_ladder_id_id", table_name="ladder_events")
    op.create_index("ix_ladder_events_ladder_id_number", "ladder_events", ["ladder_id", "number"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_ladder_events_ladder_id_number", table_name="ladder_events")
    op.create_index("ix_ladder_events_ladder_id_id", "ladder_events", ["ladder_id", "id"])
    op.drop_column("ladders", "last_event")
    op.drop_column("ladder_events", "number")
