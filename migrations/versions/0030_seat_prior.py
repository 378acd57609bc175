"""The seats' prior per ladder: ``ladders.seat_prior``, the standard deviation (logits) of a seat's advantage
before its first game.  Existing ladders keep the 1 logit their ratings were computed with; new ladders get the
service's default.

Revision ID: 0030
Revises: 0029
"""

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("seat_prior", sa.Float(), nullable=False, server_default="1.0"))


def downgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("seat_prior")
