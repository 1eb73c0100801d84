"""``list_opts`` for the ``oslo.config.opts`` entry point.

``oslo-config-generator --config-file
etc/scheduler/scheduler-config-generator.conf`` writes the sample from it.
"""

import collections

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

_MODULES = (api_database, compute, database, moves, notifications, placement,
            prometheus, scheduler, cells, trusted_computing, upgrade_levels,
            neutron)


def list_opts():
    """Return ``[(group, [opts])]`` for every option this service owns."""
    merged = collections.defaultdict(list)
    for module in _MODULES:
        for group, opts in module.list_opts().items():
            merged[group].extend(opts)
    return [(group, opts) for group, opts in merged.items()]
