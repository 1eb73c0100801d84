"""A request case (JSON) as a RequestSpec, built with either side's
classes: Nova's (``nova.objects``) in ``translate.py``, ours in the test.

``classes`` has ``RequestSpec``, ``Flavor``, ``ImageMeta``,
``RequestGroup``, ``RequestLevelParams`` and ``Destination``; the
image gets a name, which Nova's conflict messages read.
"""

SET_FIELDS = ('required_traits', 'forbidden_traits', 'forbidden_aggregates',
              'root_required', 'root_forbidden')


def with_sets(fields):
    """``fields`` with the JSON lists of set fields as sets."""
    return {name: set(value) if name in SET_FIELDS else value
            for name, value in fields.items()}


def request_spec(case, classes):
    spec = classes.RequestSpec(flavor=classes.Flavor(**case['flavor']))
    if case.get('image_properties') is not None:
        spec.image = classes.ImageMeta.from_dict(
            {'name': 'image', 'properties': case['image_properties']})
    if 'is_bfv' in case:
        spec.is_bfv = case['is_bfv']
    if case.get('requested_resources') is not None:
        spec.requested_resources = [
            classes.RequestGroup(**with_sets(group))
            for group in case['requested_resources']]
    if case.get('request_level_params') is not None:
        spec.request_level_params = classes.RequestLevelParams(
            **with_sets(case['request_level_params']))
    if case.get('destination') is not None:
        spec.requested_destination = classes.Destination(
            **with_sets(case['destination']))
    for field in ('force_hosts', 'force_nodes', 'scheduler_hints'):
        if case.get(field) is not None:
            setattr(spec, field, case[field])
    return spec


def nodes_named(nodes, host, node):
    """The nodes of ``nodes`` (dicts) a requested host and/or node name,
    as Nova's HostManager.get_compute_nodes_by_host_or_node finds them."""
    return [found for found in nodes
            if (not host or found['host'] == host) and
            (not node or found['hypervisor_hostname'] == node)]
