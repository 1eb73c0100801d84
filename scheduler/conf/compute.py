"""``[DEFAULT]`` options about compute nodes that scheduling depends on.

These live outside ``nova/conf/scheduler.py`` in Nova (in its compute,
service and availability zone option modules) but decide how the
scheduler reads a compute node: allocation ratios, the service liveness
window and the default availability zone.  The ``initial_*``
allocation ratios are Nova's since Stein: Nova writes them into a new
compute node's row; here they are the fallback of a row without a ratio.
"""

import socket

from oslo_config import cfg

compute_opts = [
    cfg.FloatOpt('cpu_allocation_ratio', default=0.0, min=0.0,
                 help='Virtual CPU to physical CPU allocation ratio, used '
                      'when a compute node row has no ratio of its own '
                      '(NULL or 0.0).  0.0 means '
                      '``initial_cpu_allocation_ratio``.'),
    cfg.FloatOpt('ram_allocation_ratio', default=0.0, min=0.0,
                 help='Virtual RAM to physical RAM allocation ratio, used '
                      'when a compute node row has no ratio of its own.  '
                      '0.0 means ``initial_ram_allocation_ratio``.'),
    cfg.FloatOpt('disk_allocation_ratio', default=0.0, min=0.0,
                 help='Virtual disk to physical disk allocation ratio, used '
                      'when a compute node row has no ratio of its own.  '
                      '0.0 means ``initial_disk_allocation_ratio``.'),
    cfg.FloatOpt('initial_cpu_allocation_ratio', default=4.0, min=0.0,
                 help='Nova\'s option and default (since Stein): the CPU '
                      'ratio of a compute node when neither its row nor '
                      '``cpu_allocation_ratio`` sets one.  Set 16.0 for '
                      'the Newton/Ocata fallback.'),
    cfg.FloatOpt('initial_ram_allocation_ratio', default=1.0, min=0.0,
                 help='Nova\'s option and default (since Stein): the RAM '
                      'ratio of a compute node when neither its row nor '
                      '``ram_allocation_ratio`` sets one.  Set 1.5 for '
                      'the Newton/Ocata fallback.'),
    cfg.FloatOpt('initial_disk_allocation_ratio', default=1.0, min=0.0,
                 help='Nova\'s option and default (since Stein): the disk '
                      'ratio of a compute node when neither its row nor '
                      '``disk_allocation_ratio`` sets one.'),
    cfg.StrOpt('default_availability_zone', default='nova',
               help='Availability zone of compute hosts that are in no '
                    'aggregate with ``availability_zone`` metadata.'),
]

service_opts = [
    cfg.StrOpt('host', default=socket.gethostname(),
               sample_default='<current_hostname>',
               help='Name of this scheduler service: the RPC server name '
                    'and the ``scheduler.<host>`` notification publisher.'),
    cfg.IntOpt('service_down_time', default=60, min=1,
               help='Seconds since its last heartbeat after which a compute '
                    'service is considered down.  Raised to 2.5 times '
                    '``report_interval`` when not larger than it.'),
    cfg.IntOpt('report_interval', default=10, min=1,
               help='Seconds between the heartbeats of services, used to '
                    'bound ``service_down_time``.'),
]


def register_opts(conf):
    conf.register_opts(compute_opts)
    conf.register_opts(service_opts)


def list_opts():
    return {'DEFAULT': compute_opts + service_opts}
