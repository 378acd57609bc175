"""Each player's strength as it stood just after their last game, and the ladder's running sum of vectors.

``ladders.field_sum`` ({"sum": [...], "count": m}) is the sum of every player's
vector, kept by each game commit so that the field's mean vector is known
without reading every player; null means "recompute it from the players" (after
a replay or a new player).  ``players.strength_then`` is the player's Hodge
strength (logits) against the field right after their last game: the
leaderboard shows how far the field has moved them since.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("field_sum", sa.JSON(), nullable=True))
    with op.batch_alter_table("players") as batch_op:
        batch_op.add_column(sa.Column("strength_then", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("players") as batch_op:
        batch_op.drop_column("strength_then")
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("field_sum")
