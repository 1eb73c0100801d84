"""Options of the ``[scheduler]``, ``[filter_scheduler]`` and ``[metrics]``
groups.

Names, types and defaults are Nova's Ocata (15.0.0) ones
(``nova/conf/scheduler.py``), but for ``enabled_filters`` and ``workers``,
whose defaults are Nova 34's (``NEWTON_DEFAULT_FILTERS`` keeps the old
list); the Newton ``[DEFAULT]`` names stay accepted
as deprecated aliases, exactly as Ocata accepted them.  Options Nova added
after Ocata that operators rely on are included with their upstream
defaults, and the few options of our own are marked as such in their help.
"""

from oslo_config import cfg

from scheduler.conf import groups

scheduler_group = cfg.OptGroup(
    name='scheduler', title='Scheduler configuration',
    help='Options that select and tune the scheduler driver.')

filter_scheduler_group = cfg.OptGroup(
    name='filter_scheduler', title='Filter scheduler options',
    help='Options of the filter scheduler: filters, weighers and the '
         'random choice among the best hosts.')

metrics_group = cfg.OptGroup(
    name='metrics', title='Metrics parameters',
    help='Options of the MetricsFilter and MetricsWeigher.')

NEWTON_DEFAULT_FILTERS = [
    'RetryFilter',
    'AvailabilityZoneFilter',
    'RamFilter',
    'DiskFilter',
    'ComputeFilter',
    'ComputeCapabilitiesFilter',
    'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter',
    'ServerGroupAffinityFilter',
]

# Nova 34's ``[filter_scheduler] enabled_filters`` default (the default
# here since issue 32): Nova dropped RetryFilter (Queens), RamFilter,
# DiskFilter (Placement checks them) and AvailabilityZoneFilter (the
# request filter ``map_az_to_placement_aggregate`` replaces it).
NOVA_DEFAULT_FILTERS = [
    'ComputeFilter',
    'ComputeCapabilitiesFilter',
    'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter',
    'ServerGroupAffinityFilter',
]


def _old(name):
    """The Newton ``[DEFAULT]`` name of an option, as a deprecated alias."""
    return [cfg.DeprecatedOpt(name, group='DEFAULT')]


scheduler_opts = [
    cfg.StrOpt('driver', default='filter_scheduler',
               deprecated_opts=_old('scheduler_driver'),
               help='Name of the scheduler driver, an entry point in the '
                    '``scheduler.driver`` namespace: ``filter_scheduler`` '
                    '(filters, then weighers) or ``chance_scheduler`` '
                    '(a random live compute host).'),
    cfg.StrOpt('host_manager', default='host_manager',
               choices=[('host_manager', 'The SQL-backed host manager.'),
                        ('ironic_host_manager',
                         'The same, with bare-metal (Ironic) nodes consumed '
                         'and claimed whole, as in Newton and Ocata.')],
               deprecated_opts=_old('scheduler_host_manager'),
               help='The host manager to use.  ``ironic_host_manager`` '
                    'takes a whole compute node of hypervisor type '
                    '``ironic`` for each instance (no RAM, disk or vCPU '
                    'left; its claim holds the node\'s whole size), keeps '
                    'no instance list for such nodes, and runs '
                    '``baremetal_enabled_filters`` when '
                    '``use_baremetal_filters`` is set.  Nova schedules '
                    'Ironic nodes through Placement\'s custom resource '
                    'classes since Pike (``[scheduler] use_placement``).'),
    cfg.IntOpt('periodic_task_interval', default=60,
               deprecated_opts=_old('scheduler_driver_task_period'),
               help='Seconds between runs of the driver periodic tasks.  A '
                    'negative value disables them; 0 runs them at the '
                    'default periodic spacing (60 seconds).'),
    cfg.IntOpt('max_attempts', default=3, min=1,
               deprecated_opts=_old('scheduler_max_attempts'),
               help='Maximum number of schedule attempts for a build.  It '
                    'also bounds the number of alternates: each '
                    'Selection list holds at most ``max_attempts`` hosts.'),
    cfg.IntOpt('discover_hosts_in_cells_interval', default=-1, min=-1,
               help='Seconds between two runs of the periodic task that '
                    'maps new compute hosts to their cells, as '
                    '``nova-manage cell_v2 discover_hosts`` does: a '
                    '``host_mappings`` row in the API database for each '
                    'host with unmapped compute nodes in a cell, then '
                    '``compute_nodes.mapped = 1``.  The first run is at '
                    'start; 0 runs it every 60 seconds; negative (the '
                    'default) never.  When several schedulers run, only '
                    'the leader runs it, by Nova\'s rule: the first host, '
                    'in sorted order, of the enabled ``nova-scheduler`` '
                    'services that are up in the ``[scheduler] '
                    'service_cell`` database (Nova\'s own schedulers '
                    'included).  Nova database mode only: the standalone '
                    'schema has no host mappings, and the option is '
                    'ignored there (logged at start).'),
    cfg.IntOpt('workers', min=0,
               help='Number of worker processes of the scheduler service.  '
                    'Unset or 0 means the number of CPUs, as in Nova 34 '
                    '(``processutils.get_worker_count()``); set 1 for the '
                    'single process of earlier releases.'),
    cfg.FloatOpt('drain_timeout', default=5.0, min=0.0,
                 help='Seconds a stopping scheduler process (SIGTERM, or '
                      'its parent gone) waits for the requests it has '
                      'started to finish, after it stopped taking new '
                      'ones (our own option).  The messages it took but '
                      'did not start go back to RabbitMQ for the other '
                      'workers and services.  Keep it below '
                      '``[DEFAULT] graceful_shutdown_timeout``.'),
    cfg.IntOpt('random_seed',
               help='Seed of the random source used for the '
                    '``host_subset_size`` choice and the chance scheduler '
                    '(our own option).  Set it to make placements '
                    'reproducible, e.g. for trace replays; unset means an '
                    'unpredictable seed.'),
    cfg.FloatOpt('host_state_max_age', default=0.0, min=0.0,
                 help='Seconds for which a decision may use the view of the '
                      'compute nodes, services and instances that an '
                      'earlier decision read, without reading the rows '
                      'changed since (our own option).  0 (the default) '
                      'reads them before every decision.  A larger value '
                      'saves a database round trip per decision; the view '
                      'is then at most this old.  With several schedulers '
                      'and ``claim_resources``, a stale view can only cost '
                      'lost claim races, never an overcommitted node.'),
    cfg.IntOpt('full_refresh_interval', default=300, min=0,
               help='Seconds between full re-reads of every compute node, '
                    'compute service and instance row (our own option).  '
                    'In between, each decision reads only the rows created, '
                    'updated or deleted since the previous one, at a cost '
                    'proportional to the rows changed.  A full read also '
                    'happens whenever compute nodes appear or go, and it '
                    'bounds how long the rows of a writer whose clock lags '
                    'more than a second behind the scheduler\'s can stay '
                    'unseen.  0 re-reads everything for every decision, as '
                    'Nova did.'),
    cfg.BoolOpt('freeze_host_view', default=True,
                help='After a full read of the host view (the first '
                     'decision\'s, then one every ``full_refresh_interval`` '
                     'seconds, but at most one a minute), collect Python\'s '
                     'garbage once and leave every object then alive out '
                     'of later collections (``gc.freeze()``; our own '
                     'option).  At 10,000 hosts a worker holds about '
                     '250,000 such objects, and each full collection that '
                     'walks them takes about 100 ms inside a decision.  '
                     'A frozen object that becomes unreachable cyclic '
                     'garbage is reclaimed at the next freeze.  False '
                     'leaves Python\'s collector as it is.'),
    cfg.BoolOpt('use_placement', default=False,
                help='Placement mode (our own option; Nova\'s scheduler '
                     'has used Placement since Pike): the hosts considered '
                     'are the compute nodes whose resource provider (the '
                     'one whose uuid is the node\'s) can hold the request '
                     'by Placement\'s rules, computed in memory from '
                     '``[placement_database]``; the chosen host is claimed '
                     'with ``PUT /allocations/{instance}`` through the '
                     '``[placement]`` API, and each Selection carries its '
                     'allocation request.  False: the Newton/Ocata design, '
                     'claims in this service\'s own database.'),
    cfg.IntOpt('max_placement_results', default=1000, min=1,
               help='Nova\'s option (since Queens): the ``limit`` of its '
                    '``GET /allocation_candidates``, so that Nova '
                    'considers at most that many compute nodes (those '
                    'Placement returns first).  Here every compute node '
                    'is considered, unless ``[placement] '
                    'apply_max_placement_results`` is True (see '
                    'docs/placement.rst).'),
    cfg.BoolOpt('limit_tenants_to_placement_aggregate', default=False,
                help='Placement mode: restrict a project to the aggregates '
                     'whose ``filter_tenant_id`` metadata key (or '
                     '``filter_tenant_id<N>``) names it, through '
                     '``member_of`` (Nova\'s option, since Rocky).'),
    cfg.BoolOpt('placement_aggregate_required_for_tenants', default=False,
                help='With ``limit_tenants_to_placement_aggregate``, fail '
                     'the request (NoValidHost) of a project no aggregate '
                     'names, instead of placing it anywhere (Nova\'s '
                     'option).'),
    cfg.BoolOpt('query_placement_for_image_type_support', default=False,
                help='Placement mode: require the trait '
                     '``COMPUTE_IMAGE_TYPE_<disk_format>`` on the compute '
                     'node of an instance that does not boot from volume '
                     '(Nova\'s option, since Train).'),
    cfg.BoolOpt('enable_isolated_aggregate_filtering', default=False,
                help='Placement mode: keep instances out of an aggregate '
                     'with ``trait:<TRAIT>=required`` metadata unless their '
                     'flavor or image requires that trait (Nova\'s option, '
                     'since Train).'),
    cfg.BoolOpt('image_metadata_prefilter', default=False,
                help='Placement mode: turn the image\'s bus, video, VIF, '
                     'architecture and vIOMMU properties into required '
                     'traits of the compute node (Nova\'s option, since '
                     'Ussuri).'),
    cfg.BoolOpt('query_placement_for_routed_network_aggregates',
                default=False,
                help='Placement mode: keep an instance whose requested '
                     'networks or ports are on a routed network (Neutron '
                     'segments) to the aggregates of those segments, '
                     'asking Neutron (``[neutron]``) as Nova does (Nova\'s '
                     'option, since Xena).'),
    cfg.BoolOpt('claim_resources', default=True,
                help='Claim the chosen node\'s vCPUs, RAM and disk in the '
                     'database before returning it, so that several '
                     'workers or services never overcommit a node (our '
                     'own option).  Each claim is one conditional UPDATE '
                     'of the ``compute_nodes`` row that only succeeds '
                     'while reported usage plus earlier claims plus this '
                     'request fit under the total times the allocation '
                     'ratio; a lost race moves on to the next host.  A '
                     'claim is released when the compute node\'s own '
                     'usage report includes the instance, when the '
                     'request fails, or after ``claim_timeout``.  When '
                     'false, concurrent schedulers may overcommit a node, '
                     'as Nova\'s filter scheduler may.'),
    cfg.IntOpt('max_batched_requests', default=32, min=1,
               help='How many select_destinations requests, queued while '
                    'a worker decides, it may decide together (our own '
                    'option): one refresh of the view and one claim '
                    'transaction for all of them, each placed in turn in '
                    'arrival order, seeing the ones before it, so the '
                    'answers are those of deciding them one by one.  No '
                    'request waits for others to come: a batch is what '
                    'queued meanwhile.  1 decides every request on its '
                    'own.'),
    cfg.FloatOpt('decision_timeout', default=10.0, min=0,
                 help='Seconds a select_destinations decision may wait on '
                      'the database (our own option).  Each statement '
                      'and lock wait is bounded by it on the database '
                      'server (PostgreSQL ``statement_timeout`` and '
                      '``lock_timeout``, MySQL/MariaDB '
                      '``innodb_lock_wait_timeout`` and statement time), '
                      'as is opening a connection; and here, since a '
                      'frozen server cannot time out by itself: a decision '
                      'still unfinished after it and waiting (not '
                      'computing, and in Placement mode not getting '
                      'answers from Placement) is abandoned, the caller '
                      'gets DatabaseUnavailable (PlacementUnavailable when '
                      'a Placement request is in flight), and the '
                      'decision commits no claim (it releases any it '
                      'committed meanwhile).  '
                      'Keep it well below the callers\' '
                      '``rpc_response_timeout`` (60).  0 disables it.'),
    cfg.IntOpt('claim_timeout', default=300, min=1,
               help='Seconds after which a resource claim whose instance '
                    'never showed up on the chosen host is released (our '
                    'own option, used with ``claim_resources``).  It must '
                    'exceed the longest delay between the scheduler\'s '
                    'answer and the compute node recording the instance '
                    'and its usage, or the instance is briefly not '
                    'counted.'),
    cfg.FloatOpt('claim_release_delay', default=0.0, min=0, max=60,
                 help='Seconds a release asked by a delete_instance_info '
                      'cast may wait for others to be released with it in '
                      'one lookup and one transaction (our own option, '
                      'used with ``claim_resources``).  0 releases each '
                      'at once.  A host deleting many instances sends one '
                      'cast per instance to every worker; a delay such as '
                      '0.5 turns those into one lookup per worker per '
                      'delay, while the deleted instances\' claims count '
                      'for up to that much longer.'),
]

filter_scheduler_opts = [
    cfg.IntOpt('host_subset_size', default=1, min=1,
               deprecated_opts=_old('scheduler_host_subset_size'),
               help='Size of the subset of best hosts from which the '
                    'host is picked at random.  1 always picks the '
                    'best-weighed host; larger values lower the chance that '
                    'concurrent schedulers pick the same host.'),
    cfg.IntOpt('max_io_ops_per_host', default=8, min=0,
               deprecated_opts=_old('max_io_ops_per_host'),
               help='IoOpsFilter: hosts with this many or more concurrent '
                    'I/O-heavy operations (builds, resizes, snapshots, '
                    'migrations) are filtered out.'),
    cfg.IntOpt('max_instances_per_host', default=50, min=1,
               deprecated_opts=_old('max_instances_per_host'),
               help='NumInstancesFilter: hosts with this many or more '
                    'instances are filtered out.'),
    cfg.BoolOpt('track_instance_changes', default=True,
                deprecated_opts=_old('scheduler_tracks_instance_changes'),
                help='Keep the instances of each host in memory, updated by '
                     'the ``update_instance_info``, ``delete_instance_info`` '
                     'and ``sync_instance_info`` casts of the compute '
                     'services.  When off, the instances of each host are '
                     'read from the database for every request.'),
    cfg.MultiStrOpt('available_filters',
                    default=['scheduler.filters.all_filters'],
                    deprecated_opts=_old('scheduler_available_filters'),
                    help='Filter classes the scheduler may use: dotted class '
                         'paths, or a function returning a list of classes. '
                         'The default, ``scheduler.filters.all_filters``, '
                         'gives every class registered in the '
                         '``scheduler.filters`` entry-point namespace, ours '
                         'and third-party ones.  May be given several '
                         'times.'),
    cfg.ListOpt('enabled_filters', default=NOVA_DEFAULT_FILTERS,
                deprecated_opts=_old('scheduler_default_filters'),
                help='Filter class names, in the order they run.  Each must '
                     'be among the available filters, or the service '
                     'refuses to start (SchedulerHostFilterNotFound).  The '
                     'default is Nova 34\'s.  Without Placement '
                     '(``[scheduler] use_placement`` False) nothing but a '
                     'filter checks RAM, disk or the availability zone: '
                     'the Newton/Ocata default was RetryFilter,'
                     'AvailabilityZoneFilter,RamFilter,DiskFilter,'
                     'ComputeFilter,ComputeCapabilitiesFilter,'
                     'ImagePropertiesFilter,ServerGroupAntiAffinityFilter,'
                     'ServerGroupAffinityFilter.'),
    cfg.ListOpt('baremetal_enabled_filters',
                default=['RetryFilter', 'AvailabilityZoneFilter',
                         'ComputeFilter', 'ComputeCapabilitiesFilter',
                         'ImagePropertiesFilter', 'ExactRamFilter',
                         'ExactDiskFilter', 'ExactCoreFilter'],
                deprecated_opts=_old('baremetal_scheduler_default_filters'),
                deprecated_for_removal=True,
                help='Filters used instead of ``enabled_filters`` when '
                     '``use_baremetal_filters`` is set.'),
    cfg.BoolOpt('use_baremetal_filters', default=False,
                deprecated_opts=_old('scheduler_use_baremetal_filters'),
                deprecated_for_removal=True,
                help='Use ``baremetal_enabled_filters`` instead of '
                     '``enabled_filters`` (with ``[scheduler] host_manager '
                     '= ironic_host_manager`` only, as in Nova).'),
    cfg.ListOpt('weight_classes',
                default=['scheduler.weights.all_weighers'],
                deprecated_opts=_old('scheduler_weight_classes'),
                help='Weigher classes to use: dotted class paths, weigher '
                     'names registered in the ``scheduler.weighers`` '
                     'namespace (e.g. ``RAMWeigher``), or a function '
                     'returning classes.  Nova paths such as '
                     '``nova.scheduler.weights.ram.RAMWeigher`` are '
                     'accepted and mapped to the weigher of the same name.'),
    cfg.FloatOpt('ram_weight_multiplier', default=1.0,
                 deprecated_opts=_old('ram_weight_multiplier'),
                 help='RAMWeigher multiplier.  Positive spreads instances '
                      'over hosts with more free RAM; negative stacks them.'),
    cfg.FloatOpt('cpu_weight_multiplier', default=1.0,
                 help='CPUWeigher multiplier.  Positive spreads instances '
                      'over hosts with more free vCPUs; negative stacks '
                      'them.'),
    cfg.FloatOpt('disk_weight_multiplier', default=1.0,
                 deprecated_opts=_old('disk_weight_multiplier'),
                 help='DiskWeigher multiplier.  Positive spreads instances '
                      'over hosts with more free disk; negative stacks '
                      'them.'),
    cfg.FloatOpt('io_ops_weight_multiplier', default=-1.0,
                 deprecated_opts=_old('io_ops_weight_multiplier'),
                 help='IoOpsWeigher multiplier.  Negative prefers hosts '
                      'with fewer concurrent I/O-heavy operations.'),
    cfg.FloatOpt('pci_weight_multiplier', default=1.0, min=0.0,
                 help='PCIWeigher multiplier.  Positive keeps hosts with PCI '
                      'devices free for requests that need them.'),
    cfg.FloatOpt('soft_affinity_weight_multiplier', default=1.0, min=0.0,
                 deprecated_opts=_old('soft_affinity_weight_multiplier'),
                 help='ServerGroupSoftAffinityWeigher multiplier.'),
    cfg.FloatOpt('soft_anti_affinity_weight_multiplier', default=1.0,
                 min=0.0,
                 deprecated_opts=_old('soft_anti_affinity_weight_multiplier'),
                 help='ServerGroupSoftAntiAffinityWeigher multiplier.'),
    cfg.FloatOpt('build_failure_weight_multiplier', default=1000000.0,
                 help='BuildFailureWeigher multiplier: how strongly hosts '
                      'with recent build failures are avoided.'),
    cfg.FloatOpt('cross_cell_move_weight_multiplier', default=1000000.0,
                 help='CrossCellWeigher multiplier.  With a single cell '
                      'every host gets the same weight.'),
    cfg.FloatOpt('hypervisor_version_weight_multiplier', default=1.0,
                 help='HypervisorVersionWeigher multiplier.  Positive '
                      'prefers newer hypervisors.'),
    cfg.FloatOpt('num_instances_weight_multiplier', default=0.0,
                 help='NumInstancesWeigher multiplier.  0 disables it; '
                      'negative spreads instances, positive packs them.'),
    cfg.FloatOpt('best_fit_weight_multiplier', default=0.0,
                 help='BestFitWeigher multiplier (ours, not in Nova).  0 '
                      'disables it; positive prefers the host whose '
                      'tightest resource (vCPU, RAM or local disk, as the '
                      'claims count them) is left smallest by the '
                      'request: best-fit packing, see '
                      '``etc/scheduler/packing.conf``.  Negative prefers '
                      'the loosest fit.'),
    cfg.FloatOpt('ram_first_fit_weight_multiplier', default=0.0,
                 help='RamFirstFitWeigher multiplier (ours, not in Nova).  '
                      '0 disables it; positive prefers the host whose RAM '
                      '(with the allocation ratio, as the claims count it) '
                      'is left smallest by the request, ties going to the '
                      'tightest other resource: best fit on the resource '
                      'a fleet usually runs out of first, see '
                      '``etc/scheduler/packing.conf``.  Negative prefers '
                      'the loosest fit.'),
    cfg.FloatOpt('mixed_fit_weight_multiplier', default=0.0,
                 help='MixedFitWeigher multiplier (ours, not in Nova).  0 '
                      'disables it; positive ranks as '
                      'RamFirstFitWeigher, plus bonuses that put small '
                      'instances next to large ones and large instances '
                      'on hosts of mostly small ones: the packing profile '
                      '``etc/scheduler/packing.conf`` uses it.'),
    cfg.FloatOpt('mixed_fit_large_share', default=0.25, min=0.0, max=1.0,
                 help='MixedFitWeigher: an instance whose RAM is at least '
                      'this share of a node\'s RAM (``memory_mb`` of the '
                      'compute node) is large on that node, any other is '
                      'small.'),
    cfg.FloatOpt('image_props_weight_multiplier', default=0.0,
                 help='ImagePropertiesWeigher multiplier.  0 disables it.'),
    cfg.ListOpt('image_props_weight_setting', default=[],
                help='``property=ratio`` pairs for the '
                     'ImagePropertiesWeigher; empty weighs every property '
                     'with ratio 1.'),
    cfg.BoolOpt('shuffle_best_same_weighed_hosts', default=False,
                help='Shuffle the hosts that share the best weight before '
                     'the ``host_subset_size`` choice, so that identical '
                     'hosts are used evenly.'),
    cfg.StrOpt('image_properties_default_architecture',
               help='ImagePropertiesFilter: architecture assumed for images '
                    'that do not set ``hw_architecture``.'),
    cfg.ListOpt('isolated_images', default=[],
                deprecated_opts=_old('isolated_images'),
                help='IsolatedHostsFilter: image UUIDs that may only run on '
                     '``isolated_hosts``.'),
    cfg.ListOpt('isolated_hosts', default=[],
                deprecated_opts=_old('isolated_hosts'),
                help='IsolatedHostsFilter: hosts that may only run '
                     '``isolated_images``.'),
    cfg.BoolOpt('restrict_isolated_hosts_to_isolated_images', default=True,
                deprecated_opts=_old(
                    'restrict_isolated_hosts_to_isolated_images'),
                help='IsolatedHostsFilter: forbid non-isolated images on '
                     'isolated hosts.'),
    cfg.StrOpt('aggregate_image_properties_isolation_namespace',
               deprecated_opts=_old(
                   'aggregate_image_properties_isolation_namespace'),
               help='AggregateImagePropertiesIsolation: only aggregate '
                    'metadata keys in this namespace are compared.'),
    cfg.StrOpt('aggregate_image_properties_isolation_separator',
               default='.',
               deprecated_opts=_old(
                   'aggregate_image_properties_isolation_separator'),
               help='AggregateImagePropertiesIsolation: separator between '
                    'the namespace and the key.'),
    cfg.BoolOpt('pci_in_placement', default=False,
                help='Nova 34: PCI devices of flavor aliases are scheduled '
                     'and claimed in Placement (set it on nova-api, '
                     'nova-conductor and the scheduler alike, once every '
                     'compute has ``[pci] report_in_placement``).  The '
                     'conductor then sends one request group per device, '
                     'and NUMATopologyFilter and PciPassthroughFilter '
                     'check each allocation candidate with its mappings '
                     '(as they do whenever a request carries such '
                     'groups).  Here it also says which requests to '
                     'expect: a request contradicting it is logged once '
                     '(docs/placement.rst).'),
]

metrics_opts = [
    cfg.FloatOpt('weight_multiplier', default=1.0,
                 help='MetricsWeigher multiplier.'),
    cfg.ListOpt('weight_setting', default=[],
                help='``metric=ratio`` pairs weighed by the MetricsWeigher '
                     'and required by the MetricsFilter, e.g. '
                     '``cpu.percent=-1.0``.'),
    cfg.BoolOpt('required', default=True,
                help='MetricsWeigher: fail (ComputeHostMetricNotFound) when '
                     'a host lacks a metric of ``weight_setting``; when '
                     'false, such a host gets ``weight_of_unavailable``.'),
    cfg.FloatOpt('weight_of_unavailable', default=-10000.0,
                 help='MetricsWeigher: weight of a host that lacks a metric '
                      'when ``required`` is false.'),
]


def register_opts(conf):
    groups.register_group(conf, scheduler_group)
    conf.register_opts(scheduler_opts, group=scheduler_group)
    groups.register_group(conf, filter_scheduler_group)
    conf.register_opts(filter_scheduler_opts, group=filter_scheduler_group)
    groups.register_group(conf, metrics_group)
    conf.register_opts(metrics_opts, group=metrics_group)


def list_opts():
    return {
        scheduler_group: scheduler_opts,
        filter_scheduler_group: filter_scheduler_opts,
        metrics_group: metrics_opts,
    }
