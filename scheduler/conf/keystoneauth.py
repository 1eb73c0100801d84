"""keystoneauth1's options of a client group (``[placement]``,
``[neutron]``), registered when a client needs them.

``keystoneauth1.loading`` imports ``requests`` (about 0.1 s), which a
``scheduler-manage`` command has no use for.  So the session, auth and
adapter options of a group are registered by ``register_opts`` on their
first use: by the Placement and Neutron clients, the readiness probe
and ``scheduler-service`` at start (before it examines the config files
for options it does not honour).  Registering after the configuration
files were read is fine: oslo.config looks a value up when it is read.
``oslo-config-generator`` lists them all the same
(``scheduler.conf.opts.list_opts``).
"""

from typing import Any

from oslo_config import cfg

# Nova 34's default of ``valid_interfaces`` for the services it calls.
VALID_INTERFACES = ['internal', 'public']


def register_opts(conf: Any, group: str, service_type: str,
                  timeout: float) -> None:
    """Register keystoneauth1's session, auth and adapter options
    (without the deprecated adapter names, as Nova 34 does) in
    ``[group]`` of ``conf`` (a ``ConfigOpts``), with ``service_type``,
    ``VALID_INTERFACES`` and ``timeout`` (seconds a request may take;
    keystoneauth1 has none) as defaults; a no-op when they are
    registered already.  ``group`` must be registered."""
    if 'auth_type' in getattr(conf, group):
        return
    from keystoneauth1 import loading

    loading.register_session_conf_options(conf, group)
    loading.register_auth_conf_options(conf, group)
    loading.register_adapter_conf_options(conf, group,
                                          include_deprecated=False)
    conf.set_default('service_type', service_type, group=group)
    conf.set_default('valid_interfaces', VALID_INTERFACES, group=group)
    conf.set_default('timeout', timeout, group=group)


def all_opts(plugin: str = 'password') -> list[cfg.Opt]:
    """Every option ``register_opts`` registers, and those of the auth
    ``plugin`` (the one listed in a sample configuration) that the
    common auth options do not name already."""
    from keystoneauth1 import loading

    common = loading.get_auth_common_conf_options()
    names = {opt.dest for opt in common}
    return (loading.get_session_conf_options() + common +
            [opt for opt in loading.get_auth_plugin_conf_options(plugin)
             if opt.dest not in names] +
            loading.get_adapter_conf_options(include_deprecated=False))
