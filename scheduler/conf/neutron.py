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

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from scheduler.conf import groups

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
    groups.register_group(conf, neutron_group)
    conf.register_opts(neutron_opts, group=neutron_group)
    ks_loading.register_session_conf_options(conf, neutron_group.name)
    ks_loading.register_auth_conf_options(conf, neutron_group.name)
    ks_loading.register_adapter_conf_options(conf, neutron_group.name,
                                             include_deprecated=False)
    conf.set_default('service_type', DEFAULT_SERVICE_TYPE,
                     group=neutron_group.name)
    conf.set_default('valid_interfaces', ['internal', 'public'],
                     group=neutron_group.name)
    conf.set_default('timeout', DEFAULT_TIMEOUT, group=neutron_group.name)


def list_opts():
    auth_opts = ks_loading.get_auth_common_conf_options()
    plugin_opts = ks_loading.get_auth_plugin_conf_options('password')
    return {
        neutron_group: (
            neutron_opts + ks_loading.get_session_conf_options() +
            auth_opts +
            [opt for opt in plugin_opts
             if opt.dest not in {o.dest for o in auth_opts}] +
            ks_loading.get_adapter_conf_options(include_deprecated=False)),
    }
