"""Ladders may shrink each player's learning rate with games played (eta_tau; null = constant η).

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("eta_tau", sa.Double(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("eta_tau")
