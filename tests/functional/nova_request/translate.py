"""Nova 34.0.0's own translation of a request into an allocation
candidates query, as a JSON filter for the tests.

Run with the python of a virtualenv holding Nova (``python -I``), never
with this repository on ``sys.path``.  Reads one JSON list of cases on
stdin and writes one JSON list of answers on stdout, in order.  A case
describes a request (``flavor``, ``image_properties``, ``is_bfv``,
``requested_resources``, ``request_level_params``, ``destination``,
``force_hosts``, ``force_nodes``, ``scheduler_hints``), the compute
nodes a host or node name finds (``nodes``: ``uuid``, ``host``,
``hypervisor_hostname``) and ``max_placement_results``.  An answer is
``{"query": the query string Nova's resources_from_request_spec builds,
"destination": [host, node] or null}`` or ``{"error": the exception's
class name}``.
"""

import json
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases  # noqa: E402
import nova.conf  # noqa: E402
from nova import exception  # noqa: E402
from nova import objects  # noqa: E402
from nova.scheduler import utils  # noqa: E402

CONF = nova.conf.CONF


class Nodes:
    """Nova's HostManager lookup of a requested host or node, over the
    case's nodes."""

    def __init__(self, nodes):
        self.nodes = nodes

    def get_compute_nodes_by_host_or_node(self, ctxt, host, node, cell=None):
        return [types.SimpleNamespace(**found)
                for found in cases.nodes_named(self.nodes, host, node)]


def translate(case):
    CONF.set_override('max_placement_results',
                      case['max_placement_results'], group='scheduler')
    spec = cases.request_spec(case, objects)
    try:
        request = utils.resources_from_request_spec(
            None, spec, Nodes(case.get('nodes', ())))
    except (exception.NovaException, ValueError) as error:
        return {'error': type(error).__name__}
    destination = None
    if 'requested_destination' in spec and spec.requested_destination:
        found = spec.requested_destination
        destination = [found.host if 'host' in found else None,
                       found.node if 'node' in found else None]
    return {'query': request.to_querystring(), 'destination': destination}


def main():
    CONF([], project='nova', default_config_files=[],
         default_config_dirs=[])
    objects.register_all()
    json.dump([translate(case) for case in json.load(sys.stdin)],
              sys.stdout)


if __name__ == '__main__':
    main()
