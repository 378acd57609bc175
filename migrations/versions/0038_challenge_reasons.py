"""Why the server withdrew a challenge: ``challenges.reason`` (a player merge left two players a second unresolved
challenge, or one against oneself).  Existing challenges have none.

Revision ID: 0038
Revises: 0037
"""

import sqlalchemy as sa
from alembic import op

revision = "0038"
down_revision = "0037"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("challenges", sa.Column("reason", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("challenges") as batch_op:
        batch_op.drop_column("reason")
