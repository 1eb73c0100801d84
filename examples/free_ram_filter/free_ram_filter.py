"""An example third-party filter: keep a margin of free RAM on every host.

A host passes when, after placing the instance, at least
``[free_ram_threshold] min_free_ram_mb`` MiB of its RAM stay free (free RAM
as the compute node reports it, without overcommit).  It only implements
Nova's plug-in contract, ``host_passes(host_state, spec_obj)``.
"""

from oslo_config import cfg

from scheduler import filters
from scheduler.conf import CONF

OPTS = [
    cfg.IntOpt('min_free_ram_mb', default=1024, min=0,
               help='RAM in MiB that must stay free on a host after the '
                    'instance is placed.'),
]
CONF.register_opts(OPTS, group='free_ram_threshold')


class FreeRamThresholdFilter(filters.BaseHostFilter):
    """Pass hosts keeping ``min_free_ram_mb`` MiB free after the instance."""

    def host_passes(self, host_state, spec_obj):
        left = host_state.free_ram_mb - spec_obj.memory_mb
        return left >= CONF.free_ram_threshold.min_free_ram_mb
