"""The rules a schema must keep to be distributed by ladder (Citus's co-located tables, docs/operations.md), checked on
the migrated schema of each database, and what breaks them today.

Every table of ladder data is distributed by ``ladder_id`` (``ladders`` by its own ``id``), so:

- it has a ``ladder_id`` column;
- every primary key, unique constraint and unique index includes the distribution column;
- every foreign key to another distributed table joins on it (``ladder_id`` to ``ladder_id``; to ``ladders``,
  ``ladder_id`` to ``id``).

Tables of no ladder are reference tables, listed in :data:`REFERENCE`.  :data:`KNOWN` lists what breaks the
rules now.  A new table, key or constraint that breaks them fails this
test; so does fixing one of the known ones without taking it off the list, which keeps the list the plan of
what is left.
"""

from __future__ import annotations

import importlib

from sqlalchemy import create_engine, inspect

from app.core.config import Settings
from tests.helpers import REFERENCE

migration = importlib.import_module("migrations.versions.0029_keys_by_ladder")

#: What breaks the rules today, on each database: (table, what).  On PostgreSQL, nothing.  SQLite keeps its
#: tables keyed by their own ids (it counts ids up only for a lone ``INTEGER PRIMARY KEY``) and its slugs unique
#: in ``ladders`` too: a SQLite database is one file, never distributed.
KNOWN = {
    "postgresql": set(),
    "sqlite": {
        ("ladders", "unique (slug)"),
        *((table, "primary key (id)") for table in migration.BY_ID),
        *((table, f"foreign key ({column}) -> {referred} (id)") for table, column, referred, _ in migration.FOREIGN),
        ("participants", "primary key (game_id, player_id)"),
        ("season_standings", "primary key (season_id, rank)"),
        *((table, "primary key (id)") for table in ("webhooks", "webhook_deliveries")),  # migration 0034
        ("webhook_deliveries", "foreign key (webhook_id) -> webhooks (id)"),
    },
}


def dialect(url: str) -> str:
    return "postgresql" if url.startswith("postgresql") else "sqlite"


def broken_rules(url: str) -> set[tuple[str, str]]:
    """What breaks the rules in the schema of the database at ``url``."""
    engine = create_engine(Settings(database_url=url).sqlalchemy_url)
    try:
        schema = inspect(engine)
        found = set()
        for table in set(schema.get_table_names()) - REFERENCE:
            column = "id" if table == "ladders" else "ladder_id"
            if column not in {c["name"] for c in schema.get_columns(table)}:
                found.add((table, "no ladder_id"))
            keys = [("primary key", schema.get_pk_constraint(table)["constrained_columns"])]
            keys += [("unique", u["column_names"]) for u in schema.get_unique_constraints(table)]
            keys += [("unique", i["column_names"]) for i in schema.get_indexes(table) if i["unique"]]
            for kind, columns in keys:
                if columns and column not in columns:  # (a table without a primary key has none)
                    found.add((table, f"{kind} ({', '.join(columns)})"))
            for fk in schema.get_foreign_keys(table):
                referred = "id" if fk["referred_table"] == "ladders" else "ladder_id"
                pairs = dict(zip(fk["constrained_columns"], fk["referred_columns"], strict=True))
                if pairs.get(column) != referred:
                    what = f"({', '.join(fk['constrained_columns'])}) -> {fk['referred_table']} "
                    found.add((table, f"foreign key {what}({', '.join(fk['referred_columns'])})"))
        return found
    finally:
        engine.dispose()


def test_the_schema_breaks_no_rule_of_distribution_by_ladder_beyond_the_known(database_url):
    assert broken_rules(database_url) == KNOWN[dialect(database_url)]


def test_the_rules_catch_a_table_without_ladder_id(database_url):
    engine = create_engine(Settings(database_url=database_url).sqlalchemy_url)
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE notes (id INTEGER PRIMARY KEY, ladder_id INTEGER, body TEXT)")
        connection.exec_driver_sql("CREATE TABLE tags (note_id INTEGER REFERENCES notes (id), tag TEXT)")
    engine.dispose()
    assert broken_rules(database_url) - KNOWN[dialect(database_url)] == {
        ("notes", "primary key (id)"),
        ("tags", "no ladder_id"),
        ("tags", "foreign key (note_id) -> notes (id)"),
    }
