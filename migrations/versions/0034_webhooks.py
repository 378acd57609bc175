"""Outgoing webhooks and the Slack slash command: ``webhooks`` (a ladder's URLs, the events each takes, its signing
secret, its cursor in the ladder's event log and who works on it), ``webhook_deliveries`` (each event sent, its
body and attempts), ``slack_commands`` (a ladder's Slack signing secret) and ``slack_requests`` (the signatures of
recent slash commands, against replays).

On PostgreSQL the keys include ``ladder_id``, as migration 0029 made every key of ladder data; SQLite keeps its
single-column integer keys.

Revision ID: 0034
Revises: 0033
"""

import sqlalchemy as sa
from alembic import op

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    by_ladder = ["id", "ladder_id"] if postgresql else ["id"]
    op.create_table(
        "webhooks",
        sa.Column("id", BigId, nullable=False, autoincrement=True),
        sa.Column("ladder_id", BigId, nullable=False),
        sa.Column("url", sa.String(2000), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("secret", sa.String(100), nullable=False),
        sa.Column("cursor", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("failing", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("retry_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("digest_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_owner", sa.String(200), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_webhooks_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint(*by_ladder, name=op.f("pk_webhooks")),
        sqlite_autoincrement=True,  # a deleted webhook's id is never another's
    )
    op.create_index("ix_webhooks_ladder_id", "webhooks", ["ladder_id"])
    to_webhook = (["webhook_id", "ladder_id"], ["webhooks.id", "webhooks.ladder_id"]) if postgresql else None
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", BigId, nullable=False, autoincrement=True),
        sa.Column("ladder_id", BigId, nullable=False),
        sa.Column("webhook_id", BigId, nullable=False),
        sa.Column("event", sa.String(16), nullable=False),
        sa.Column("event_number", sa.BigInteger(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("response_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_webhook_deliveries_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            *(to_webhook or (["webhook_id"], ["webhooks.id"])),
            name=op.f("fk_webhook_deliveries_webhook_id_webhooks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(*by_ladder, name=op.f("pk_webhook_deliveries")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_webhook_deliveries_webhook_id_id", "webhook_deliveries", ["webhook_id", "id"])
    op.create_index("ix_webhook_deliveries_created_at", "webhook_deliveries", ["created_at"])  # pruning
    op.create_table(
        "slack_commands",
        sa.Column("ladder_id", BigId, nullable=False),
        sa.Column("signing_secret", sa.String(200), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_slack_commands_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("ladder_id", name=op.f("pk_slack_commands")),
    )
    op.create_table(
        "slack_requests",
        sa.Column("ladder_id", BigId, nullable=False),
        sa.Column("signature", sa.String(80), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["ladder_id"], ["ladders.id"], name=op.f("fk_slack_requests_ladder_id_ladders"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("ladder_id", "signature", name=op.f("pk_slack_requests")),
    )
    op.create_index("ix_slack_requests_seen_at", "slack_requests", ["seen_at"])


def downgrade() -> None:
    op.drop_table("slack_requests")
    op.drop_table("slack_commands")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhooks")
