"""Nova 34.0.0's own request filters (``nova.scheduler.request_filter``)
as a JSON filter for ``tests/functional/test_request_filters_nova.py``.

Run with the python of a virtualenv holding Nova (``python -I``), never
with this repository on ``sys.path``.  Reads one JSON list of cases on
stdin and writes one JSON list of answers on stdout, in order.  A case
is a request case of ``cases.py`` (``flavor``, ``image_properties``,
``is_bfv``, ``requested_resources``) with the image's ``disk_format``,
``options`` (``[scheduler]`` option name: value) and optionally
``requested_networks`` (``[network_id, port_id]`` pairs),
``pci_requests`` (``{"request_id", "alias_name"}``) and
``min_compute_version`` (0 when absent).  The filters of ``RUN`` are run
in the order of Nova's ``ALL_REQUEST_FILTERS``; the others need Nova's
database.

What Nova's filters read outside the request: Neutron is the stand-in
at ``$NEUTRON_URL`` (``[neutron] auth_type = admin_token``, token
``$NEUTRON_TOKEN``), asked through Nova's own ``neutron.API`` and
neutronclient; the minimum compute version of all cells
(``objects.service.get_minimum_version_all_cells``) is the case's;
Placement's ``GET /resource_providers/{uuid}/aggregates`` answers from
``$SEGMENT_AGGREGATES`` (JSON: provider uuid -> aggregate uuids; an
unknown uuid raises what Nova's report client raises for Placement's
404).  An answer is ``{"root_required": [...], "root_forbidden": [...],
"member_of": [[...], ...], "owner_groups": [...]}`` (sorted but
``member_of``'s order) or ``{"error": the exception's class name}``.
"""

import json
import os
import sys
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases  # noqa: E402
import nova.conf  # noqa: E402
from keystoneauth1 import loading as ks_loading  # noqa: E402
from nova import context as nova_context  # noqa: E402
from nova import exception  # noqa: E402
from nova import objects  # noqa: E402
from nova.scheduler import request_filter  # noqa: E402
from nova.scheduler.client import report  # noqa: E402

CONF = nova.conf.CONF

RUN = ('require_image_type_support', 'compute_status_filter',
       'transform_image_metadata', 'accelerators_filter',
       'packed_virtqueue_filter', 'routed_networks_filter',
       'remote_managed_ports_filter', 'ephemeral_encryption_filter',
       'virtio_sound_filter', 'tpm_secret_security_filter',
       'owner_nova_filter')


def filters():
    """Nova's filters named in ``RUN``, in Nova's order; fails when Nova
    lacks one of them."""
    found = [function for function in request_filter.ALL_REQUEST_FILTERS
             if function.__name__ in RUN]
    missing = set(RUN) - {function.__name__ for function in found}
    if missing:
        raise SystemExit('Nova has no request filter %s' % sorted(missing))
    return found


class Placement:
    """Nova's report client, for ``_get_provider_aggregates`` only."""

    def __init__(self, aggregates):
        self.aggregates = aggregates

    def _get_provider_aggregates(self, context, rp_uuid):
        if rp_uuid not in self.aggregates:
            raise exception.ResourceProviderAggregateRetrievalFailed(
                uuid=rp_uuid)
        return report.AggInfo(aggregates=set(self.aggregates[rp_uuid]),
                              generation=1)


def _network_requests(case):
    return objects.NetworkRequestList(objects=[
        objects.NetworkRequest(network_id=network, port_id=port)
        for network, port in case['requested_networks']])


def _pci_requests(case):
    return objects.InstancePCIRequests(requests=[
        objects.InstancePCIRequest(count=1, spec=[{}], **request)
        for request in case['pci_requests']])


def request_spec(case):
    spec = cases.request_spec(case, objects)
    spec.image.disk_format = case['disk_format']
    if case.get('requested_networks') is not None:
        spec.requested_networks = _network_requests(case)
    if case.get('pci_requests') is not None:
        spec.pci_requests = _pci_requests(case)
    return spec


def answer(spec):
    destination = (spec.requested_destination
                   if 'requested_destination' in spec else None)
    member_of = [sorted(entry.split(',')) for entry in
                 (destination.aggregates if destination else None) or ()]
    groups = (spec.requested_resources if 'requested_resources' in spec
              else [])
    return {'root_required': sorted(spec.root_required),
            'root_forbidden': sorted(spec.root_forbidden),
            'member_of': member_of,
            'owner_groups': sorted(group.requester_id for group in groups
                                   if 'OWNER_NOVA' in group.required_traits)}


OVERRIDDEN = set()


def run(case, functions, context):
    # A case's options only: the previous case's are cleared.
    while OVERRIDDEN:
        CONF.clear_override(OVERRIDDEN.pop(), group='scheduler')
    for name, value in case['options'].items():
        CONF.set_override(name, value, group='scheduler')
        OVERRIDDEN.add(name)
    version = case.get('min_compute_version', 0)
    spec = request_spec(case)
    try:
        with mock.patch.object(objects.service,
                               'get_minimum_version_all_cells',
                               return_value=version):
            for function in functions:
                function(context, spec)
    except (exception.NovaException, ValueError) as error:
        return {'error': type(error).__name__}
    return answer(spec)


def configure():
    CONF([], project='nova', default_config_files=[],
         default_config_dirs=[])
    if os.environ.get('NEUTRON_URL'):
        CONF.set_override('auth_type', 'admin_token', 'neutron')
        CONF.set_override('endpoint', os.environ['NEUTRON_URL'], 'neutron')
        CONF.set_override('token', os.environ['NEUTRON_TOKEN'], 'neutron')


def main():
    objects.register_all()
    # The auth plugin's options of [neutron], before they are set.
    CONF.register_opts(ks_loading.get_auth_plugin_conf_options(
        'admin_token'), group='neutron')
    configure()
    functions = filters()
    placement = Placement(json.loads(os.environ.get('SEGMENT_AGGREGATES')
                                     or '{}'))
    context = nova_context.get_admin_context()
    with mock.patch.object(report, 'report_client_singleton',
                           return_value=placement):
        json.dump([run(case, functions, context)
                   for case in json.load(sys.stdin)], sys.stdout)


if __name__ == '__main__':
    main()
