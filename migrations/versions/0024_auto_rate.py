"""The learning rate a ladder's own log chooses: ``ladders.auto_rate`` (its auto refits choose η and τ; false: the
rate is pinned as an admin set it) and ``ladders.rate_choice`` (the latest rate a refit chose and applied, with
its evidence; null until one did).

Existing ladders on the default rate (η 0.7, τ 3) let their next auto refits choose it; those whose rate was set
otherwise (at creation or by an admin since) keep it pinned.

Revision ID: 0024
Revises: 0023
"""

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("auto_rate", sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(sa.Column("rate_choice", sa.JSON(), nullable=True))
    op.execute("UPDATE ladders SET auto_rate = false WHERE eta <> 0.7 OR eta_tau IS NULL OR eta_tau <> 3.0")


def downgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("rate_choice")
        batch_op.drop_column("auto_rate")
