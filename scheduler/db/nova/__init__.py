"""Nova database mode: the scheduler on a Nova deployment's own databases.

``schema`` declares the columns of Nova's tables that are read, ``cells``
finds the cell databases through the API database's ``cell_mappings``
(``url_templates`` fills the templated ones as Nova does), ``ids`` makes
row ids unique across cells, ``scatter`` reads the cells side by side
within a bound, ``source`` answers the host view's reads
(``scheduler.db.source.HostSource``), and ``node_claims``
and ``reconcile`` keep the claims on Nova's nodes in our own database.
See ``docs/nova-databases.rst``.
"""
