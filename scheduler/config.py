"""Parsing the command line and config files; setting up oslo.log.

Every console entry point calls ``parse_args`` once; ``version()`` is
what their ``--version`` prints.  Passwords in
``[database] connection`` and ``transport_url`` are ``secret`` options,
so oslo.config masks them when the options are logged.  Text a log
handler cannot encode (a lone surrogate from a message, say) is written
escaped (``\\udXXX``) instead of losing the record.
"""

import logging as std_logging
from importlib import metadata

from oslo_log import log as logging

from scheduler.conf import CONF

# The distribution whose version ``version()`` gives.
DISTRIBUTION = 'openstack-standalone-scheduler'


def register_log_options():
    """Register oslo.log's options once per process."""
    if 'debug' not in CONF:
        logging.register_options(CONF)


def version():
    """The installed distribution's version (str, e.g. ``0.1.0``), or
    ``unknown`` when it runs from a source tree that is not installed."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return 'unknown'


def parse_args(argv, default_config_files=None, messaging=True,
               terminal=None, epilog=None):
    """Parse ``argv`` into CONF and set up logging for the service.

    ``messaging=False`` leaves oslo.messaging unimported (its defaults,
    ``scheduler.rpc.set_defaults``, unset): for commands that send
    nothing, whose start-up it would slow down; one that then sends
    calls ``rpc.set_defaults()`` itself first.  ``terminal``
    (``'stderr'`` or ``'stdout'``), for a command-line tool: see
    ``log_to_terminal``.  ``epilog``: what ``--help`` prints last.
    """
    register_log_options()
    CONF(argv, project='scheduler', version=version(),
         default_config_files=default_config_files, epilog=epilog)
    if messaging:
        # Imported here, once ``--help`` and ``--version`` have exited:
        # oslo.messaging (and eventlet, which it imports) is a second of
        # start-up a command that sends nothing skips.  Its options are
        # no command-line options, so they may come after the parse.
        from scheduler import rpc

        rpc.set_defaults()
    if terminal is not None:
        log_to_terminal(terminal)
    logging.setup(CONF, 'scheduler')
    escape_unencodable(std_logging.getLogger())


def log_to_terminal(stream):
    """A command-line tool's logging, once the configuration is parsed:
    to ``[DEFAULT] log_file`` (or ``log_dir``) alone when one is set, as
    the service logs; else to ``stream`` (``'stderr'`` or ``'stdout'``).
    oslo.log's ``use_stderr`` (True by default) would also copy every
    line to the terminal; setting it in the configuration still does."""
    to_file = bool(CONF.log_file or CONF.log_dir)
    CONF.set_default('use_stderr', stream == 'stderr' and not to_file)


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
