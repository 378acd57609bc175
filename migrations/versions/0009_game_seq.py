"""Games are numbered within their ladder (seq 1, 2, 3, …), separately from their global ids.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("games") as batch_op:
        batch_op.add_column(sa.Column("seq", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("last_seq", sa.BigInteger(), nullable=False, server_default="0"))
    op.execute(
        "UPDATE games SET seq = numbered.n FROM "
        "(SELECT id, row_number() OVER (PARTITION BY ladder_id ORDER BY id) AS n FROM games) AS numbered "
        "WHERE games.id = numbered.id"
    )
    op.execute("UPDATE ladders SET last_seq = (SELECT count(*) FROM games WHERE games.ladder_id = ladders.id)")


def downgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("last_seq")
    with op.batch_alter_table("games") as batch_op:
        batch_op.drop_column("seq")
