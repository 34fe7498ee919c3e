"""Alembic environment: runs on the connection handed over by ``engine.migrate``."""

from alembic import context

from assay.storage.catalog.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through assay.storage.catalog.migrate(engine)")

context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
