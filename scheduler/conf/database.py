"""``[database]``: oslo.db's options, with an embedded SQLite default.

The default connection, a SQLite file in the current directory, is the
embedded default of the replay and the benchmark; ``scheduler-service``
refuses to start on it (``scheduler.server.preflight``) and production sets
``postgresql+psycopg2://`` or ``mysql+pymysql://`` URLs.  The
``connection`` option is ``secret``, so its password never reaches the
logs.
"""

from oslo_db import options as oslo_db_options

DEFAULT_CONNECTION = 'sqlite:///scheduler.sqlite'


def register_opts(conf):
    oslo_db_options.set_defaults(conf, connection=DEFAULT_CONNECTION)


def list_opts():
    """Nothing of our own: the sample takes ``[database]`` from the
    ``oslo.db`` generator namespace."""
    return {}
