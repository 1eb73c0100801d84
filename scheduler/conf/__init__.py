"""Configuration: every option of the service, registered on ``CONF``.

``CONF`` is oslo.config's global ``cfg.CONF`` (oslo.messaging needs the
global object; a private ``ConfigOpts`` lacks its hidden groups).  One
module per option group or theme; ``opts.list_opts`` feeds
``oslo-config-generator``.
"""

from oslo_config import cfg

from scheduler.conf import api_database
from scheduler.conf import cells
from scheduler.conf import compute
from scheduler.conf import database
from scheduler.conf import moves
from scheduler.conf import neutron
from scheduler.conf import notifications
from scheduler.conf import placement
from scheduler.conf import prometheus
from scheduler.conf import scheduler
from scheduler.conf import trusted_computing
from scheduler.conf import upgrade_levels

CONF = cfg.CONF

for _module in (api_database, compute, database, moves, notifications,
                placement, prometheus, scheduler, cells, trusted_computing,
                upgrade_levels, neutron):
    _module.register_opts(CONF)


def register_client_opts(conf: cfg.ConfigOpts = CONF) -> None:
    """Register keystoneauth1's options of ``[placement]`` and
    ``[neutron]``, which the modules above leave to the clients
    (``scheduler.conf.keystoneauth``): for a process that reads or
    checks every option, such as ``scheduler-service`` at start."""
    placement.register_client_opts(conf)
    neutron.register_client_opts(conf)
