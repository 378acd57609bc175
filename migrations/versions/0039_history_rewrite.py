"""A rewrite of a ladder's history written ahead of the change it is for (``ladders.history_rewrite``): a new rate's
or a refit's replay writes the log's history in transactions of its own, then switches in a short one.

Revision ID: 0039
Revises: 0038
"""

import sqlalchemy as sa
from alembic import op

revision = "0039"
down_revision = "0038"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("ladders", sa.Column("history_rewrite", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("history_rewrite")
