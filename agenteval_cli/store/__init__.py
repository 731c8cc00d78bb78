"""The embedded SQLite store: schema, migrations, results and locks."""
