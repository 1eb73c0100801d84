"""``[placement]`` and ``[placement_database]``: the Placement mode.

``[placement]`` holds keystoneauth1's session, auth and adapter options,
registered as Nova registers them (``service_type = placement``, the
``internal`` then ``public`` interface): with a test Placement in
``noauth2``, ``auth_type = admin_token``, ``token = admin`` and
``endpoint_override = http://127.0.0.1:PORT``.  The claims go through
this API.  ``[placement_database] connection`` (our own option) is
Placement's database, which the service reads, read-only, to keep its
in-memory view of the resource providers (see ``docs/placement.rst``).
Both are used only with ``[scheduler] use_placement``.
"""

from oslo_config import cfg

from scheduler.conf import groups
from scheduler.conf import keystoneauth

placement_group = cfg.OptGroup(
    name='placement', title='Placement service options',
    help='How to reach the Placement API, which holds the claims in '
         'Placement mode (``[scheduler] use_placement``): keystoneauth1\'s '
         'session, auth and adapter options, as in Nova.')

placement_database_group = cfg.OptGroup(
    name='placement_database', title='Placement database (read-only)',
    help='Placement\'s own database, read (never written) in Placement '
         'mode for the view of the resource providers (our own group).')

placement_database_opts = [
    cfg.StrOpt('connection', secret=True,
               help='SQLAlchemy URL of Placement\'s database (the '
                    '``[placement_database] connection`` of Placement '
                    'itself).  Required with ``[scheduler] '
                    'use_placement``: the resource providers, inventories, '
                    'usages, traits and aggregates are read from it, only '
                    'the providers whose generation changed at each '
                    'refresh.'),
    cfg.FloatOpt('usage_check_interval', default=0.5, min=0.05,
                 help='Seconds between two checks for usage that '
                      'Placement freed without bumping a provider\'s '
                      'generation (allocations deleted, or a consumer '
                      'moved off a provider: a server deleted, shelve-'
                      'offloaded, evacuated).  Each check reads one '
                      'aggregate row of Placement\'s ``allocations`` '
                      'table, and every provider\'s usage only when it '
                      'changed.  A provider freed in Placement is '
                      'schedulable again within about this many seconds '
                      '(see docs/placement.rst).'),
]

# Our own options of ``[placement]``: the in-memory allocation
# candidates (scheduler.placement.trees).
placement_candidate_opts = [
    cfg.IntOpt('max_candidate_combinations', default=100000, min=1,
               help='The most combinations of resource providers (one '
                    'provider per request group, complete or not) one '
                    'search of a request\'s allocation candidates over '
                    'provider trees examines in memory, in Placement '
                    'mode (a search: the candidate hosts of an instance, '
                    'or the allocation request of the host chosen): a '
                    'bound on its time, about a quarter of a second of '
                    'one core at the default, where requests with many '
                    'numbered groups under ``group_policy=isolate`` or '
                    'on one resource class could take hours.  The '
                    'compute nodes a search leaves undecided are left '
                    'out for the rest of the request (logged), and a '
                    'request left with no host gets NoValidHost naming '
                    'this option.  Placement\'s own ``[placement] '
                    'max_allocation_candidates`` (Placement 2024.1 and '
                    'later; default -1, no limit) counts the candidates '
                    'it generates and returns that many: it does not '
                    'bound a search that finds none, and Placement is '
                    'not asked for candidates in Placement mode (see '
                    'docs/placement.rst).'),
    cfg.BoolOpt('apply_max_placement_results', default=False,
                help='Placement mode: consider at most ``[scheduler] '
                     'max_placement_results`` compute nodes per request, '
                     'as Nova does by asking Placement with that '
                     '``limit`` (lifted, as Nova lifts it, for a '
                     'requested host of several nodes and for the '
                     '``group``, ``same_host`` and ``different_host`` '
                     'hints): the first ones in resource provider id '
                     'order, where Placement 16 returns the first ones '
                     'in the iteration order of a Python set of '
                     'allocation requests (or a random sample with its '
                     '``randomize_allocation_candidates``).  False (our '
                     'default): every compute node is considered.'),
]

DEFAULT_SERVICE_TYPE = 'placement'
# Seconds a request to Placement may take (keystoneauth1's session
# ``timeout``, which has none by default): below ``[scheduler]
# decision_timeout`` (10 s), so a Placement that accepts a request and
# never answers fails the claim instead of holding the decision.
DEFAULT_TIMEOUT = 5.0


def register_opts(conf):
    """Register this module's groups and options, but keystoneauth1's
    (``register_client_opts``)."""
    groups.register_group(conf, placement_group)
    groups.register_group(conf, placement_database_group)
    conf.register_opts(placement_database_opts,
                       group=placement_database_group)
    conf.register_opts(placement_candidate_opts, group=placement_group)


def register_client_opts(conf):
    """Register keystoneauth1's options of ``[placement]``
    (``scheduler.conf.keystoneauth``), with Nova 34's defaults for the
    service type and interfaces, and ``DEFAULT_TIMEOUT``."""
    keystoneauth.register_opts(conf, placement_group.name,
                               DEFAULT_SERVICE_TYPE, DEFAULT_TIMEOUT)


def list_opts():
    return {
        placement_group: keystoneauth.all_opts() + placement_candidate_opts,
        placement_database_group: placement_database_opts,
    }
