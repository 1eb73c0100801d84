"""Parsing the command line and config files; setting up oslo.log.

Every console entry point calls ``parse_args`` once.  Passwords in
``[database] connection`` and ``transport_url`` are ``secret`` options,
so oslo.config masks them when the options are logged.  Text a log
handler cannot encode (a lone surrogate from a message, say) is written
escaped (``\\udXXX``) instead of losing the record.
"""

import logging as std_logging

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
    escape_unencodable(std_logging.getLogger())


def _escaped(text):
    """``text`` with what UTF-8 cannot encode (lone surrogates)
    backslash-escaped; ``text`` itself when it encodes."""
    try:
        text.encode('utf-8')
        return text
    except UnicodeEncodeError:
        return text.encode('utf-8', 'backslashreplace').decode('utf-8')


class EscapeUnencodable(std_logging.Filter):
    """A handler filter that escapes a record's message when it holds
    text UTF-8 cannot encode (for handlers that encode it themselves,
    such as syslog's); other records pass unchanged."""

    def filter(self, record):
        message = record.getMessage()
        escaped = _escaped(message)
        if escaped is not message:
            record.msg, record.args = escaped, None
        return True


def escape_unencodable(logger):
    """Make every handler of ``logger`` write what it cannot encode
    escaped: streams (files, stderr) with ``backslashreplace`` errors,
    also after a file handler reopens its file, which covers formatted
    exceptions too; and an ``EscapeUnencodable`` filter (once)."""
    for handler in logger.handlers:
        stream = getattr(handler, 'stream', None)
        if hasattr(stream, 'reconfigure'):
            stream.reconfigure(errors='backslashreplace')
        if isinstance(handler, std_logging.FileHandler):
            handler.errors = 'backslashreplace'
        if not any(isinstance(f, EscapeUnencodable)
                   for f in handler.filters):
            handler.addFilter(EscapeUnencodable())
