"""Parsing the command line and config files; setting up oslo.log.

Every console entry point calls ``parse_args`` once.  Passwords in
``[database] connection`` and ``transport_url`` are ``secret`` options,
so oslo.config masks them when the options are logged.
"""

from oslo_log import log as logging

from scheduler import rpc
from scheduler.conf import CONF


def register_log_options():
    """Register oslo.log's options once per process."""
    if 'debug' not in CONF:
        logging.register_options(CONF)


def parse_args(argv, default_config_files=None):
    """Parse ``argv`` into CONF and set up logging for the service."""
    register_log_options()
    rpc.set_defaults()
    CONF(argv, project='scheduler', version='0.1.0',
         default_config_files=default_config_files)
    logging.setup(CONF, 'scheduler')
