"""``scheduler-manage host``: compute hosts on the standalone schema.

``host add`` writes what a starting ``nova-compute`` writes (its
``services`` row and a ``compute_nodes`` row with nothing used); ``host
list`` and ``host show`` give each node as the scheduler sees it (zone,
aggregates, up as the ComputeFilter sees it, usage, claims, instances);
``host disable``/``enable``/``delete`` are ``openstack compute service
set --disable``/``--enable`` and ``delete``; ``host heartbeat`` beats for
hosts that have no ``nova-compute`` of their own.  The writes are
``scheduler.db.hosts``', imported when a command runs (so that
``scheduler-manage --help`` does not load the database layer).
"""

import signal
import time
import typing

from cliff import command
from oslo_log import log as logging

from scheduler.cmd import manage_common
from scheduler.conf import CONF
from scheduler.resources import ratios

LOG = logging.getLogger(__name__)

ZONE_KEY = 'availability_zone'

# ``vCPUs``, ``RAM MiB`` and ``Disk GiB``: (the field, the used, claimed
# and total columns of ``compute_nodes``, the allocation ratio).
RESOURCES = (
    ('vcpus', 'vcpus_used', 'claimed_vcpus', 'vcpus', ratios.CPU),
    ('ram_mib', 'memory_mb_used', 'claimed_memory_mb', 'memory_mb',
     ratios.RAM),
    ('disk_gib', 'local_gb_used', 'claimed_disk_gb', 'local_gb',
     ratios.DISK),
)

# ``host list``'s columns: (heading, field of ``node_fields``).
LIST_COLUMNS = (
    ('Host', 'host'), ('Node', 'node'), ('Zone', 'zone'),
    ('Aggregates', 'aggregates'), ('State', 'state'), ('Status', 'status'),
    ('vCPUs', 'vcpus'), ('RAM MiB', 'ram_mib'), ('Disk GiB', 'disk_gib'),
    ('Claims', 'claims'), ('Instances', 'instances'),
    ('Last Heartbeat', 'last_heartbeat'),
)

USAGE_HELP = (
    'vCPUs, RAM MiB and Disk GiB read USED+CLAIMED/TOTAL xRATIO: the '
    "node's reported usage, the scheduler's open claims on it (not yet "
    'in its usage), its total and the allocation ratio that applies '
    "(the node's, else the configured one, else Nova's default); "
    '"Claims" counts the open claims.  State is "up" while the last '
    'heartbeat is at most [DEFAULT] service_down_time old.')

HEARTBEAT_HELP = (
    'Nothing beats for a host registered with "host add": it counts as '
    'down (the ComputeFilter passes none of its nodes) service_down_time '
    'seconds after its last heartbeat, unless a nova-compute runs for it '
    'or "scheduler-manage host heartbeat" is run every report_interval '
    '(from cron, a systemd timer or a stand-in agent).')


class Usage(manage_common.FormattedDict):
    """One resource of a node: ``used+claimed/total xratio`` in a table,
    ``{'used', 'claimed', 'total', 'allocation_ratio', 'capacity'}`` in
    JSON (``capacity`` = total * ratio)."""

    def human_readable(self) -> str:
        value = self._value
        return '%d+%d/%d x%s' % (value['used'], value['claimed'],
                                 value['total'], value['allocation_ratio'])


def host_zones(aggregates: list[dict[str, typing.Any]]) -> list[str]:
    """The host's availability zones as the AvailabilityZoneFilter reads
    them: its aggregates' ``availability_zone`` values (split on commas),
    else ``[DEFAULT] default_availability_zone``."""
    zones = {zone.strip() for aggregate in aggregates
             for zone in aggregate['metadata'].get(ZONE_KEY, '').split(',')
             if zone.strip()}
    return sorted(zones) or [CONF.default_availability_zone]


def _usage(node, used, claimed, total, ratio_name):
    ratio = ratios.resolve_allocation_ratio(ratio_name, node[ratio_name])
    return Usage({'used': node[used], 'claimed': node[claimed],
                  'total': node[total], 'allocation_ratio': ratio,
                  'capacity': node[total] * ratio})


def node_fields(entry: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """The fields ``host show`` gives of a ``hosts.compute_hosts``
    entry, in order; ``host list`` shows some of them."""
    from scheduler.view import servicegroup

    node, service = entry['node'], entry['service'] or {}
    if not service:
        status = 'no service'
    else:
        status = 'disabled' if service['disabled'] else 'enabled'
    fields = {
        'host': node['host'],
        'node': node['hypervisor_hostname'],
        'id': node['id'],
        'uuid': node['uuid'],
        'zone': ','.join(host_zones(entry['aggregates'])),
        'aggregates': manage_common.FormattedList(
            [aggregate['name'] for aggregate in entry['aggregates']]),
        'state': ('up' if service and servicegroup.service_is_up(service)
                  else 'down'),
        'status': status,
        'disabled_reason': service.get('disabled_reason'),
        'forced_down': bool(service.get('forced_down')),
        'last_heartbeat': manage_common.timestamp(
            servicegroup.last_heartbeat(service)),
        'report_count': service.get('report_count'),
        'service_id': service.get('id'),
        'hypervisor_type': node['hypervisor_type'],
        'hypervisor_version': node['hypervisor_version'],
        'host_ip': node['host_ip'],
    }
    for name, *columns in RESOURCES:
        fields[name] = _usage(node, *columns)
    fields.update(claims=entry['claims'], instances=entry['instances'],
                  created_at=manage_common.timestamp(node['created_at']),
                  updated_at=manage_common.timestamp(node['updated_at']))
    return fields


def _show_node(context, host, node=None):
    """``(names, values)`` of one node of ``host`` for a ShowOne.

    :raises scheduler.exception.ComputeHostNotFound: no node of ``host``.
    :raises scheduler.db.hosts.Refused: several nodes and no ``node``.
    """
    from scheduler import exception
    from scheduler.db import hosts

    entries = hosts.compute_hosts(context, host)
    if node is not None:
        entries = [entry for entry in entries
                   if entry['node']['hypervisor_hostname'] == node]
    if not entries:
        raise exception.ComputeHostNotFound(
            host=host if node is None else '%s (node %s)' % (host, node))
    if len(entries) > 1:
        raise hosts.Refused(reason='host %s has nodes %s: choose one with '
                            '--node' % (host, ', '.join(
                                entry['node']['hypervisor_hostname']
                                for entry in entries)))
    return manage_common.shown(node_fields(entries[0]))


class HostAdd(manage_common.ShowCommand):
    """Register a compute node as its nova-compute would."""

    details = ('Writes the rows a starting nova-compute writes: the '
               "host's services row (binary nova-compute, topic compute) "
               'unless it has one, and a compute_nodes row for NODE '
               '(default: HOST) with nothing used; a node already '
               'registered is refused.\n\n' + HEARTBEAT_HELP)

    arguments = (manage_common.HOST,)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--node', metavar='NODE',
                            help='hypervisor hostname of the node '
                            '(default: HOST)')
        parser.add_argument('--vcpus', type=int, required=True,
                            metavar='N', help='CPUs of the node')
        parser.add_argument('--memory-mb', type=int, required=True,
                            metavar='MiB', help='RAM of the node in MiB')
        parser.add_argument('--disk-gb', type=int, required=True,
                            metavar='GiB', help='local disk in GiB')
        from scheduler.db import hosts

        for name in hosts.RATIO_NAMES:
            parser.add_argument(
                '--' + name.replace('_', '-'), type=float, metavar='R',
                help="the node's %s (default: none, so the scheduler's "
                "configured %s, else Nova's default)" % (name, name))
        parser.add_argument('--hypervisor-type', default='QEMU',
                            metavar='TYPE', help='default: QEMU')
        parser.add_argument('--hypervisor-version', default='8.2.0',
                            metavar='VERSION',
                            help='dotted (8.2.0) or as Nova stores it '
                            '(8002000); default: 8.2.0')
        parser.add_argument('--cpu-arch', default='x86_64', metavar='ARCH',
                            help='the CPU architecture of cpu_info and '
                            'supported_instances; default: x86_64')
        parser.add_argument('--host-ip', metavar='IP',
                            help="the node's host_ip (default: none)")
        return parser

    def take_action(self, parsed_args):
        from scheduler.db import hosts

        context = self.context()
        node = parsed_args.node or parsed_args.host
        values = hosts.empty_node_values(
            parsed_args.host, node, parsed_args.vcpus,
            parsed_args.memory_mb, parsed_args.disk_gb,
            hypervisor_type=parsed_args.hypervisor_type,
            hypervisor_version=parsed_args.hypervisor_version,
            cpu_arch=parsed_args.cpu_arch, host_ip=parsed_args.host_ip,
            ratios={name: getattr(parsed_args, name)
                    for name in hosts.RATIO_NAMES})
        hosts.add_compute_node(context, values)
        return _show_node(context, parsed_args.host, node)


class HostList(manage_common.ListCommand):
    """List the compute nodes, one row per node."""

    details = ('Each live compute node with its host, zone and '
               'aggregates, whether it is up (as the ComputeFilter sees '
               'it) and enabled, its usage and claims, its instances and '
               "its service's last heartbeat.\n\n" + USAGE_HELP)

    def take_action(self, parsed_args):
        from scheduler.db import hosts

        return manage_common.listing(LIST_COLUMNS, [
            node_fields(entry)
            for entry in hosts.compute_hosts(self.context())])


class HostShow(manage_common.ShowCommand):
    """Show one compute node."""

    details = ('Everything "host list" shows of a node, and its ids, '
               'service, hypervisor and timestamps.\n\n' + USAGE_HELP)

    arguments = (manage_common.HOST,
                 ('--node', {'metavar': 'NODE',
                             'help': 'the node, when the host has several'}))

    def take_action(self, parsed_args):
        return _show_node(self.context(), parsed_args.host, parsed_args.node)


class HostDisable(manage_common.StandaloneCommand):
    """Disable a host's compute service (no new instances land on it)."""

    arguments = (manage_common.HOST,
                 ('--reason', {'metavar': 'REASON', 'help': 'disabled_reason, '
                               'shown by "host show"'}))

    def take_action(self, parsed_args):
        from scheduler.db import hosts

        hosts.set_compute_service_disabled(self.context(), parsed_args.host,
                                           True, parsed_args.reason)


class HostEnable(manage_common.StandaloneCommand):
    """Enable a host's compute service again."""

    arguments = (manage_common.HOST,)

    def take_action(self, parsed_args):
        from scheduler.db import hosts

        hosts.set_compute_service_disabled(self.context(), parsed_args.host,
                                           False)


class HostDelete(manage_common.StandaloneCommand):
    """Delete a host's compute service and its nodes."""

    details = ('As "openstack compute service delete": refused while the '
               'host has instances; the host leaves its aggregates (the '
               'schedulers are told), and its service and compute nodes '
               'are soft-deleted.')
    arguments = (manage_common.HOST,)

    def take_action(self, parsed_args):
        from scheduler.db import hosts

        context = self.context()
        left = hosts.delete_compute_host(context, parsed_args.host)
        self.tell_schedulers(context, 'update_aggregates', left)


class HostHeartbeat(manage_common.StandaloneCommand):
    """Stamp compute services as alive now (once, or every SECONDS)."""

    details = ('Records a heartbeat of the nova-compute services of the '
               'hosts named (or of every host with --all), as a running '
               'nova-compute does every report_interval: report_count + '
               '1, last_seen_up and updated_at now.  With --every it keeps '
               'beating in the foreground, a stand-in agent, until '
               'interrupted (Ctrl-C, SIGTERM: exit status 0) or for '
               '--for SECONDS; a beat the database refuses is logged and '
               'the next one tried.\n\n' + HEARTBEAT_HELP)

    arguments = (('hosts', {'nargs': '*', 'metavar': 'HOST',
                              'help': 'service host names'}),)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--all', action='store_true',
                            help='every compute service (those added '
                            'later too, with --every)')
        parser.add_argument('--every', type=_seconds, metavar='SECONDS',
                            help='beat again every SECONDS (less than '
                            'service_down_time), in the foreground')
        parser.add_argument('--for', dest='duration', type=_seconds,
                            metavar='SECONDS',
                            help='with --every: stop after SECONDS '
                            '(default: until interrupted)')
        self._parser = parser
        return parser

    def take_action(self, parsed_args):
        if parsed_args.all == bool(parsed_args.hosts):
            self._parser.error('name hosts, or give --all (not both)')
        if parsed_args.duration is not None and parsed_args.every is None:
            self._parser.error('--for needs --every')
        wanted = None if parsed_args.all else parsed_args.hosts
        context = self.context()
        _beat(context, wanted)
        if parsed_args.every is not None:
            _keep_beating(context, wanted, parsed_args.every,
                          parsed_args.duration)


def _seconds(text):
    value = float(text)
    if not value > 0:
        raise ValueError(text)
    return value


def _beat(context, wanted):
    """One heartbeat of ``wanted`` (host names; None: every host).

    :raises scheduler.exception.ComputeHostNotFound: a host named has no
        compute service.
    """
    from scheduler.db import hosts

    stamped = hosts.heartbeat_compute_services(context, wanted)
    missing = sorted(set(wanted or ()) - set(stamped))
    if missing:
        from scheduler import exception

        raise exception.ComputeHostNotFound(host=', '.join(missing))


def _keep_beating(context, wanted, every, duration):
    """Beat every ``every`` seconds after the first beat, for
    ``duration`` seconds (None: until SIGINT or SIGTERM, which end it
    quietly)."""
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    start = time.monotonic()
    beats = 1
    try:
        while duration is None or beats * every <= duration:
            time.sleep(max(0.0, start + beats * every - time.monotonic()))
            beats += 1
            try:
                _beat(context, wanted)
            except manage_common.database_failures() as exc:
                LOG.warning('Heartbeat %d failed: %s', beats, exc)
    except KeyboardInterrupt:
        LOG.info('Heartbeats stopped after %d', beats)
    finally:
        signal.signal(signal.SIGTERM, previous)


COMMANDS: dict[str, type[command.Command]] = {
    'host add': HostAdd,
    'host list': HostList,
    'host show': HostShow,
    'host disable': HostDisable,
    'host enable': HostEnable,
    'host delete': HostDelete,
    'host heartbeat': HostHeartbeat,
}
