"""Ladders may refit themselves as their log grows (auto_refit); refits record the log's size when started.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("auto_refit", sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table("refits") as batch_op:
        batch_op.add_column(sa.Column("log_games", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("refits") as batch_op:
        batch_op.drop_column("log_games")
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("auto_refit")
