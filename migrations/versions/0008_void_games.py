"""Games can be voided (kept in the log as an audit trail, counted nowhere); checkpoints after a voided game are
superseded (kept, never replayed from again).

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("games") as batch_op:
        batch_op.add_column(sa.Column("voided_at", Timestamp, nullable=True))
        batch_op.add_column(sa.Column("voided_by", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("void_reason", sa.String(length=500), nullable=True))
    with op.batch_alter_table("checkpoints") as batch_op:
        batch_op.add_column(sa.Column("superseded_at", Timestamp, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("checkpoints") as batch_op:
        batch_op.drop_column("superseded_at")
    with op.batch_alter_table("games") as batch_op:
        batch_op.drop_column("void_reason")
        batch_op.drop_column("voided_by")
        batch_op.drop_column("voided_at")
