"""Which server process owns each refit job, so a server that starts can take over the jobs of one that stopped.

``refits.owner`` is ``host:pid:start-time`` of the server process that queued
the job (its child process runs it).  A server starting on the same host finds
the jobs whose owner no longer runs: it queues the queued ones again and marks
the running ones failed.  Jobs from before this migration have no owner.

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("refits") as batch_op:
        batch_op.add_column(sa.Column("owner", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("refits") as batch_op:
        batch_op.drop_column("owner")
