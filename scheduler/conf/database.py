"""``[database]``: oslo.db's options, with an embedded SQLite default.

The default connection, a SQLite file in the current directory, is the
embedded default of the replay and the benchmark; ``scheduler-service``
(``scheduler.server.preflight``), ``scheduler-manage`` and
``scheduler-status`` refuse to run on it (``connection_problem``, the one
check they share) and production sets ``postgresql+psycopg2://`` or
``mysql+pymysql://`` URLs.  The
``connection`` option is ``secret``, so its password never reaches the
logs.
"""

from oslo_config import cfg
from oslo_db import options as oslo_db_options

DEFAULT_CONNECTION = 'sqlite:///scheduler.sqlite'


def register_opts(conf):
    oslo_db_options.set_defaults(conf, connection=DEFAULT_CONNECTION)


def connection_problem(conf):
    """Why ``conf`` names no database of its own (one line, str), or None.

    ``[database] connection`` counts as set when a config file, a
    ``--config-dir`` or the environment gives it, not when it is the
    embedded default (``DEFAULT_CONNECTION``, the replay's and the
    benchmark's) or a default set in code.
    """
    found = conf.get_location('connection', 'database')
    if found is None or found.location in (cfg.Locations.opt_default,
                                           cfg.Locations.set_default):
        return ('no [database] connection is set: name the scheduler\'s '
                'database in the configuration file given with '
                '--config-file (e.g. connection = postgresql+psycopg2://'
                'USER:PASSWORD@HOST/scheduler), then run "scheduler-manage '
                '--config-file FILE db sync"')
    return None


def list_opts():
    """Nothing of our own: the sample takes ``[database]`` from the
    ``oslo.db`` generator namespace."""
    return {}
