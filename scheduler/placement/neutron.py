"""A small Neutron client: what Nova's request filters ask Neutron.

``NeutronClient`` reads ports, subnets and the extension list through a
keystoneauth1 Adapter made from the ``[neutron]`` options
(``scheduler.conf.neutron``), the calls Nova 34's ``nova.network.
neutron.API`` makes for ``routed_networks_filter`` and
``remote_managed_ports_filter``:

* ``port(port_id)``: ``GET /v2.0/ports/{id}``; a 404 raises
  ``PortNotFound``, any other failure ``NeutronUnavailable`` (Nova:
  PortNotFound, or "Failed to access port"): the request ends with that
  error, as in Nova;
* ``segment_ids_for_network(network_id)``: the ``segment_id`` of the
  network's subnets (``GET /v2.0/subnets?network_id=...&fields=
  segment_id``), none without Neutron's ``segment`` extension;
* ``segment_id_for_subnet(subnet_id)``: ``GET /v2.0/subnets/{id}``'s
  ``segment_id``, None without the extension.  Both raise
  ``InvalidRoutedNetwork`` when Neutron fails or refuses (Nova's
  InvalidRoutedNetworkConfiguration, which its filter turns into
  NoValidHost).

The extension list (``GET /v2.0/extensions``) is trusted for
``[neutron] extension_sync_interval`` seconds, as Nova does; failing to
read it raises ``NeutronUnavailable``.  Every request is bounded by
``[neutron] timeout`` (5 s by default), connections are retried
``[neutron] http_retries`` times, and a decision abandoned meanwhile is
answered ``NeutronUnavailable`` (``scheduler.engine.deadline``).  The
service's own ``[neutron]`` credentials are used for every call (Nova
uses the user's token for ports and its ``[neutron]`` credentials for
subnets; the scheduler gets no user token).
"""

from __future__ import annotations

import threading
import time
from typing import Any
from urllib import parse

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging

from scheduler import exception
from scheduler.conf import neutron as neutron_conf
from scheduler.engine import deadline

LOG = logging.getLogger(__name__)

GROUP = 'neutron'
SEGMENT_EXTENSION = 'segment'


NeutronUnavailable = exception.NeutronUnavailable
PortNotFound = exception.PortNotFound
InvalidRoutedNetwork = exception.InvalidRoutedNetwork


def configured(conf: Any) -> bool:
    """Whether ``[neutron]`` says how to reach Neutron (an auth plugin or
    an endpoint)."""
    neutron_conf.register_client_opts(conf)
    group = getattr(conf, GROUP)
    return bool(group.auth_type or group.endpoint_override)


def _adapter(conf: Any) -> Any:
    neutron_conf.register_client_opts(conf)
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    session = ks_loading.load_session_from_conf_options(conf, GROUP,
                                                        auth=auth)
    return ks_loading.load_adapter_from_conf_options(
        conf, GROUP, session=session, auth=auth, raise_exc=False,
        connect_retries=getattr(conf, GROUP).http_retries)


class NeutronClient:
    """Neutron's ports and subnets (see the module); thread-safe.
    ``adapter``: a keystoneauth1 Adapter, by default the one ``conf``'s
    ``[neutron]`` options describe (made at the first call)."""

    def __init__(self, conf: Any, adapter: Any = None) -> None:
        neutron_conf.register_client_opts(conf)
        self._conf = conf
        self._adapter = adapter
        self._lock = threading.Lock()
        self._extensions: frozenset[str] = frozenset()
        self._extensions_read: float | None = None

    @property
    def adapter(self) -> Any:
        with self._lock:
            if self._adapter is None:
                self._adapter = _adapter(self._conf)
            return self._adapter

    def _get(self, path: str) -> Any:
        """``GET path``'s reply (any status).

        :raises NeutronUnavailable: no reply (connection, time-out).
        """
        timeout = getattr(self._conf, GROUP).timeout
        try:
            with deadline.outside('Neutron', NeutronUnavailable):
                return self.adapter.get(path, timeout=timeout)
        except ks_exc.ClientException as exc:
            raise NeutronUnavailable(reason='GET %s: %s' % (path, exc)) \
                from exc

    def port(self, port_id: str) -> dict[str, Any]:
        """The port ``port_id`` (Neutron's ``port`` body).

        :raises PortNotFound: Neutron has no such port.
        :raises NeutronUnavailable: Neutron failed or refused.
        """
        path = '/v2.0/ports/%s' % parse.quote(port_id, safe='')
        reply = self._get(path)
        if reply.status_code == 404:
            raise PortNotFound(port_id=port_id)
        return _body(reply, path, 'port', NeutronUnavailable)

    def has_extension(self, alias: str) -> bool:
        """Whether Neutron has the extension ``alias`` (the list read at
        most every ``extension_sync_interval`` seconds).

        :raises NeutronUnavailable: the list could not be read.
        """
        interval = getattr(self._conf, GROUP).extension_sync_interval
        now = time.monotonic()
        if (self._extensions_read is None or
                now - self._extensions_read >= interval):
            path = '/v2.0/extensions'
            listed = _body(self._get(path), path, 'extensions',
                           NeutronUnavailable)
            self._extensions = frozenset(ext['alias'] for ext in listed)
            self._extensions_read = now
        return alias in self._extensions

    def segment_ids_for_network(self, network_id: str) -> list[str]:
        """The segment uuids of ``network_id``'s subnets (none for a
        network that is not routed, or without the extension).

        :raises InvalidRoutedNetwork: Neutron failed or refused.
        :raises NeutronUnavailable: the extension list could not be read.
        """
        if not self.has_extension(SEGMENT_EXTENSION):
            return []
        path = '/v2.0/subnets?' + parse.urlencode(
            {'network_id': network_id, 'fields': 'segment_id'})
        subnets = _body(self._routed_get(path, network_id), path, 'subnets',
                        InvalidRoutedNetwork)
        return [subnet['segment_id'] for subnet in subnets
                if subnet.get('segment_id') is not None]

    def segment_id_for_subnet(self, subnet_id: str) -> str | None:
        """The segment uuid of subnet ``subnet_id`` (None when it has
        none, or without the extension).

        :raises InvalidRoutedNetwork: Neutron failed or refused (no
            such subnet included).
        :raises NeutronUnavailable: the extension list could not be read.
        """
        if not self.has_extension(SEGMENT_EXTENSION):
            return None
        path = '/v2.0/subnets/%s' % parse.quote(subnet_id, safe='')
        subnet = _body(self._routed_get(path, subnet_id), path, 'subnet',
                       InvalidRoutedNetwork)
        segment: str | None = subnet.get('segment_id')
        return segment

    def _routed_get(self, path: str, what: str) -> Any:
        try:
            return self._get(path)
        except NeutronUnavailable as exc:
            raise InvalidRoutedNetwork(
                reason='no segments for %s: %s' % (what, exc.message)) \
                from exc


def _body(reply: Any, path: str, key: str,
          error: type[exception.SchedulerException]) -> Any:
    """The ``key`` of a 200 reply's JSON body, else ``error``."""
    if reply.status_code != 200:
        raise error(reason='GET %s answered %d: %s'
                    % (path, reply.status_code, reply.text[:200]))
    try:
        return reply.json()[key]
    except (ValueError, KeyError, TypeError) as exc:
        raise error(reason='GET %s: no %r in the reply' % (path, key)) \
            from exc
