"""Which version last changed each player, so a worker's copy of a ladder catches up by reading only that.

``players.changed_version`` is the ladder version of the transaction that last
wrote the row: writes leave it at -1 (the default, for inserts too) and the
transaction's version bump stamps its rows, so a reader at version v reads the
rows with ``changed_version > v`` (indexed).  ``ladders.reset_version`` is the
version of the latest change a copy cannot follow row by row (a merge deletes a
player): a copy older than it is read anew.

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("players") as batch_op:
        batch_op.add_column(sa.Column("changed_version", sa.BigInteger(), nullable=False, server_default="-1"))
        batch_op.create_index("ix_players_ladder_id_changed_version", ["ladder_id", "changed_version"])
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("reset_version", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("reset_version")
    with op.batch_alter_table("players") as batch_op:
        batch_op.drop_index("ix_players_ladder_id_changed_version")
        batch_op.drop_column("changed_version")
