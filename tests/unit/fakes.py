"""Builders of real objects for unit tests (no mocks of what is tested).

* ``fake_host_state(host, node, **attrs)``: a HostState with attributes
  set; an unknown attribute name is an error, to catch typos.
* ``fake_service(**fields)``: a ``services`` row dict of a live, enabled
  compute service.
* ``fake_spec(**kwargs)``: a RequestSpec with a Flavor (1 vCPU, 512 MiB,
  1 GiB root, no ephemeral, no swap unless given) and every other field
  at its default.
* ``fake_aggregate(id, hosts, metadata)``: an Aggregate.
* ``fake_group(policy, members, hosts, rules)``: an InstanceGroup.
* ``fake_retry(pairs)``: a SchedulerRetries of ``(host, node)`` pairs.
"""

import uuid

from oslo_utils import timeutils

from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import flavor as flavor_obj
from scheduler.objects import image_meta
from scheduler.objects import instance as instance_obj
from scheduler.objects import instance_group as group_obj
from scheduler.objects import request_spec
from scheduler.view import host_state as host_state_module

_FLAVOR_KWARGS = ('vcpus', 'memory_mb', 'root_gb', 'ephemeral_gb', 'swap',
                  'extra_specs', 'name')


def fake_host_state(host='host1', node='node1', **attrs):
    """A real HostState for ``(host, node)`` with ``attrs`` set on it."""
    state = host_state_module.HostState(host, node)
    for name, value in attrs.items():
        if not hasattr(state, name):
            raise AttributeError('HostState has no attribute %r' % name)
        setattr(state, name, value)
    return state


def fake_service(**fields):
    """A ``services`` row of an enabled compute service seen just now."""
    now = timeutils.utcnow()
    service = {'id': 1, 'host': 'host1', 'binary': 'nova-compute',
               'topic': 'compute', 'report_count': 1, 'disabled': False,
               'disabled_reason': None, 'forced_down': False,
               'last_seen_up': now, 'created_at': now, 'updated_at': now}
    service.update(fields)
    return service


def fake_flavor(vcpus=1, memory_mb=512, root_gb=1, ephemeral_gb=0, swap=0,
                extra_specs=None, name='m1.fake'):
    return flavor_obj.Flavor(
        id=1, flavorid='1', name=name, vcpus=vcpus, memory_mb=memory_mb,
        root_gb=root_gb, ephemeral_gb=ephemeral_gb, swap=swap,
        extra_specs=dict(extra_specs or {}), rxtx_factor=1.0,
        disabled=False, is_public=True, projects=[])


def fake_image(**properties):
    """An ImageMeta whose properties are ``properties`` (legacy names are
    mapped as Glance dicts are)."""
    return image_meta.ImageMeta(
        id=str(uuid.uuid4()),
        properties=image_meta.ImageMetaProps.from_dict(properties))


def fake_spec(**kwargs):
    """A RequestSpec; flavor sizes and ``extra_specs`` may be given
    directly, ``image_props`` builds an image, ``scheduler_hints`` values
    may be scalars (wrapped in lists as Nova stores them); other keywords
    are RequestSpec fields."""
    flavor_kwargs = {key: kwargs.pop(key) for key in _FLAVOR_KWARGS
                     if key in kwargs}
    image_props = kwargs.pop('image_props', None)
    if image_props is not None:
        kwargs['image'] = fake_image(**image_props)
    hints = kwargs.pop('scheduler_hints', None)
    if hints is not None:
        kwargs['scheduler_hints'] = {
            key: value if isinstance(value, list) else [value]
            for key, value in hints.items()}
    kwargs.setdefault('flavor', fake_flavor(**flavor_kwargs))
    return request_spec.RequestSpec(**kwargs).ensure_defaults()


def fake_aggregate(id=1, hosts=('host1',), metadata=None):
    """An Aggregate ``agg<id>`` of ``hosts`` with ``metadata``."""
    return aggregate_obj.Aggregate(
        id=id, uuid=str(uuid.uuid4()), name='agg%d' % id, hosts=list(hosts),
        metadata=dict(metadata or {}))


def fake_group(policy='anti-affinity', members=(), hosts=(), rules=None,
               legacy=False):
    """An InstanceGroup with ``policy`` (in ``policies`` when ``legacy``,
    as Newton to Queens send it)."""
    group = group_obj.InstanceGroup(
        uuid=str(uuid.uuid4()), members=list(members), hosts=list(hosts),
        _rules={key: str(value) for key, value in (rules or {}).items()})
    if legacy:
        group.policies = [policy]
    else:
        group.policy = policy
    return group


def fake_retry(pairs, num_attempts=1):
    """SchedulerRetries for the ``(host, node)`` pairs already tried."""
    return request_spec.SchedulerRetries.from_dict(
        {'num_attempts': num_attempts, 'hosts': [list(p) for p in pairs]})


def fake_instances(*uuids):
    """A ``host_state.instances`` dict: uuid -> Instance."""
    return {instance_uuid: instance_obj.Instance(uuid=instance_uuid)
            for instance_uuid in uuids}


def fake_metrics(values, source='libvirt.LibvirtDriver'):
    """A ``host_state.metrics`` list as the ``compute_nodes.metrics``
    JSON holds it: ``values`` maps metric names to stored values
    (``*.percent`` ones as fractions, as Nova stores them)."""
    return [{'name': name, 'value': value, 'source': source,
             'timestamp': '2016-01-01T00:00:00.000000'}
            for name, value in values.items()]


class conf_overrides:
    """``with conf_overrides(group, name=value, ...):`` overrides options
    of ``group`` inside the block (for hypothesis tests, which cannot use
    the function-scoped ``conf`` fixture)."""

    def __init__(self, group, **values):
        self.group = group
        self.values = values

    def __enter__(self):
        from scheduler.conf import CONF
        for name, value in self.values.items():
            CONF.set_override(name, value, self.group)

    def __exit__(self, *exc_info):
        from scheduler.conf import CONF
        for name in self.values:
            CONF.clear_override(name, self.group)
