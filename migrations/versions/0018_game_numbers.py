"""A game's number within its ladder is its public id: an index finds a game by (ladder, number).  A deleted
ladder leaves a tombstone row (``deleted_at``), so its id is never given to another ladder: every process's caches
of it, kept by id, can never be taken for the new one's.

Revision ID: 0018
Revises: 0017
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_games_ladder_id_seq", "games", ["ladder_id", "seq"], unique=True)
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("deleted_at")
    op.drop_index("ix_games_ladder_id_seq", table_name="games")
