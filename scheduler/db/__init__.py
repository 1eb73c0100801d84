"""The SQL databases the scheduler reads: Nova's Newton/Ocata schema.

``models`` declares the tables with Nova's names and types,
``migrations`` creates them with alembic (``migration.db_sync``), and
``api`` holds every query, run through oslo.db's enginefacade and returning
plain dicts keyed by Nova's column names.  ``claims`` keeps the resource
claims, ``source`` chooses where the host view reads (this schema, or a
Nova deployment's own databases: the ``nova`` package), and
``service_row`` keeps the service's own ``nova-scheduler`` row.
"""
