"""When each API key was last used, and when it expires.

``api_keys.last_used_at`` is updated at most once a minute per key and
server process (it shows whether a key is still in use before revoking it);
``api_keys.expires_at`` is optional: from then on the key is refused.

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_keys") as batch_op:
        batch_op.add_column(sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch_op:
        batch_op.drop_column("expires_at")
        batch_op.drop_column("last_used_at")
