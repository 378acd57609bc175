"""Rewrites of most of a ladder's players' ratings (a replay of the log, a refit's apply) in place:
``ladders.rewritten_version``, the version of the latest one, whose rows keep their ``changed_version`` (copies of
the players older than it are read anew); and on PostgreSQL the players' pages keep room for a new version of each
row (``fillfactor`` 70), so that such a rewrite writes each new row beside the old one, with no index written (a
"heap-only tuple": the statement changes no indexed column).  Pages written from now on keep the room;
``VACUUM FULL players`` gives it to those written before.

Revision ID: 0041
Revises: 0040
"""

import sqlalchemy as sa
from alembic import op

revision = "0041"
down_revision = "0040"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("ladders", sa.Column("rewritten_version", sa.BigInteger(), nullable=False, server_default="0"))
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE players SET (fillfactor = 70)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE players RESET (fillfactor)")
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("rewritten_version")
