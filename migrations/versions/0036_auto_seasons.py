"""Seasons that close themselves: ``ladders.season_every`` (``month`` or ``quarter``; null: only an admin closes a
season), ``ladders.season_pull`` (the pull each automatic close applies) and ``ladders.season_due`` (when the
current period ends: the next automatic close; null without ``season_every``).

Revision ID: 0036
Revises: 0035
"""

import sqlalchemy as sa
from alembic import op

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("season_every", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("season_pull", sa.Float(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("season_due", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("season_due")
        batch_op.drop_column("season_pull")
        batch_op.drop_column("season_every")
