"""API keys with roles (write, admin), revocable; ladders may be private. Each ladder's write key becomes its
first admin key.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", BigId, nullable=False),
        sa.Column("ladder_id", BigId, nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("revoked_at", Timestamp, nullable=True),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_api_keys_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("ladder_id", "key_hash", name=op.f("uq_api_keys_ladder_id_key_hash")),
    )
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.add_column(sa.Column("private", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute(
        "INSERT INTO api_keys (ladder_id, name, role, key_hash, created_at) "
        "SELECT id, 'created with the ladder', 'admin', write_key_hash, created_at FROM ladders"
    )


def downgrade() -> None:
    with op.batch_alter_table("ladders") as batch_op:
        batch_op.drop_column("private")
    op.drop_table("api_keys")
