"""The SQL database the scheduler reads: Nova's Newton/Ocata schema.

``models`` declares the tables with Nova's names and types,
``migrations`` creates them with alembic (``migration.db_sync``), and
``api`` holds every query, run through oslo.db's enginefacade and returning
plain dicts keyed by Nova's column names.
"""
