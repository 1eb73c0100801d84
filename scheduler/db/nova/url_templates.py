"""Cell mapping URLs written as templates, filled as Nova fills them.

Since Stein, Nova lets ``cell_mappings.database_connection`` hold a
template such as ``{scheme}://{username}:{password}@{hostname}/nova_cell1
?{query}``, whose variables come from the ``[database] connection`` URL
of the process that reads the mapping
(``nova.objects.cell_mapping.CellMapping.format_db_url``).  ``fill``
follows Nova's rules:

* the source URL is split by ``urllib.parse.urlparse``, parts left as
  they are written (a percent-encoded password stays encoded);
* the variables are ``scheme``, ``username``, ``password``, ``hostname``
  (lower-cased, as ``urlparse`` gives it), ``port`` (an int, or None),
  ``path`` (without its leading ``/``), ``query`` and ``fragment``; a
  part the source URL lacks is None, written ``None``;
* when the source URL names several hosts (``user:pass@host:port,
  user1:pass1@host1:port1/...``, oslo.messaging's form), each also gives
  ``username<i>``, ``password<i>``, ``hostname<i>`` and ``port<i>``, ``i``
  counting from 1 (split at its first ``@`` and first ``:``, the host
  and port by ``oslo_utils.netutils.parse_host_port``);
* the stored text is formatted by ``str.format``, template or not (a URL
  without braces is unchanged).

Nova logs a template it cannot fill and uses the stored text as it is;
``fill`` raises ``TemplateError`` and its caller
(``scheduler.db.nova.cells``) does the same.  Which URL is the source is
the caller's: ``[scheduler] cell_template_connection``, else
``[api_database] connection``.
"""

from __future__ import annotations

import urllib.parse

from oslo_utils import netutils

# The parts of one host of the source URL, numbered when it has several.
HOST_PARTS = ('username', 'password', 'hostname', 'port')


class TemplateError(Exception):
    """A stored ``database_connection`` cannot be filled from the source
    URL (str: why, naming no password)."""


def _host_values(netloc: str) -> dict[str, str | int | None]:
    """The ``HOST_PARTS`` of one ``user:pass@host:port`` of a list."""
    userpass, hostport = (netloc.split('@', 1) if '@' in netloc
                          else ('', netloc))
    host, port = netutils.parse_host_port(hostport)
    username, colon, password = userpass.partition(':')
    return {'username': username, 'password': password if colon else None,
            'hostname': host, 'port': port}


def values(source: str) -> dict[str, str | int | None]:
    """The variables a template may use, from the URL ``source``.

    :raises TemplateError: ``source`` cannot be split (a port that is no
        number, an unbalanced IPv6 bracket).
    """
    try:
        parts = urllib.parse.urlparse(source)
        found: dict[str, str | int | None] = {
            'scheme': parts.scheme, 'username': parts.username,
            'password': parts.password, 'hostname': parts.hostname,
            'port': parts.port, 'path': parts.path.lstrip('/'),
            'query': parts.query, 'fragment': parts.fragment}
        if ',' in parts.netloc:
            for index, netloc in enumerate(parts.netloc.split(','), 1):
                found.update(('%s%d' % (name, index), value) for name, value
                             in _host_values(netloc).items())
    except ValueError as exc:
        raise TemplateError('the source URL cannot be split: %s'
                            % type(exc).__name__) from exc
    return found


def fill(stored: str, source: str) -> str:
    """``stored`` (a ``database_connection``) with the variables of the
    URL ``source`` filled in, as Nova's ``format_db_url`` (module
    docstring).

    :raises TemplateError: ``source`` cannot be split, or ``stored`` is
        no ``str.format`` template of these variables (an unknown name,
        an unbalanced brace); the message names the problem, not the
        values.
    """
    subs = values(source)
    try:
        return stored.format(**subs)
    except KeyError as exc:
        raise TemplateError(
            'it names {%s}, which is none of %s'
            % (exc.args[0], ', '.join(sorted(subs)))) from exc
    except (IndexError, ValueError, AttributeError, TypeError) as exc:
        raise TemplateError('it is no template of the source URL\'s '
                            'parts (%s)' % type(exc).__name__) from exc
