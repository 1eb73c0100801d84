"""``[neutron]``: how to reach Neutron, for Nova's request filters that
ask it (``scheduler.placement.request_filters_neutron``).

keystoneauth1's session, auth and adapter options, registered as Nova
34 registers its ``[neutron]`` group (``service_type = network``), so a
Nova deployment's ``[neutron]`` section works unchanged here, and
Nova's ``http_retries`` (connection retries) and
``extension_sync_interval`` (how long Neutron's extension list is
trusted).  Only the ``timeout`` default differs: Nova sets none, here a
request to Neutron is bounded by ``DEFAULT_TIMEOUT`` seconds, below
``[scheduler] decision_timeout``.  With a test Neutron, ``auth_type =
admin_token``, ``token = ...`` and ``endpoint = http://127.0.0.1:PORT``.
Used only in Placement mode (``[scheduler] use_placement``), for a
request that names ports or networks.
"""

from oslo_config import cfg

from scheduler.conf import groups
from scheduler.conf import keystoneauth

neutron_group = cfg.OptGroup(
    name='neutron', title='Neutron options',
    help='How to reach Neutron, which the Placement mode\'s request '
         'filters ask about ports, networks and subnets (routed networks, '
         'remote-managed ports): keystoneauth1\'s session, auth and '
         'adapter options, as in Nova.')

neutron_opts = [
    cfg.IntOpt('extension_sync_interval', default=600, min=0,
               help='Seconds Neutron\'s list of extensions (``GET '
                    '/v2.0/extensions``) is trusted before it is asked '
                    'again (Nova\'s option).'),
    cfg.IntOpt('http_retries', default=3, min=0,
               help='How many times a request to Neutron that cannot '
                    'connect is tried again (Nova\'s option).'),
]

DEFAULT_SERVICE_TYPE = 'network'
# Seconds a request to Neutron may take (keystoneauth1's session
# ``timeout``, none by default): below ``[scheduler] decision_timeout``.
DEFAULT_TIMEOUT = 5.0


def register_opts(conf):
    """Register ``[neutron]`` and Nova's options of it, but keystoneauth1's
    (``register_client_opts``)."""
    groups.register_group(conf, neutron_group)
    conf.register_opts(neutron_opts, group=neutron_group)


def register_client_opts(conf):
    """Register keystoneauth1's options of ``[neutron]``
    (``scheduler.conf.keystoneauth``), with Nova 34's defaults for the
    service type and interfaces, and ``DEFAULT_TIMEOUT``."""
    keystoneauth.register_opts(conf, neutron_group.name,
                               DEFAULT_SERVICE_TYPE, DEFAULT_TIMEOUT)


def list_opts():
    return {neutron_group: neutron_opts + keystoneauth.all_opts()}
