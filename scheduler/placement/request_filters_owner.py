"""Nova 34's ``owner_nova_filter`` (``nova.scheduler.request_filter``):
``OWNER_NOVA`` on the root provider and on the request groups of PCI
requests from a flavor alias, once every nova-compute reports service
version ``MIN_COMPUTE_VERSION_OWNER_TRAIT`` (73) or later
(``scheduler.placement.compute_versions`` reads it from the cells).

This keeps out the providers other services create (Cyborg's, say),
which lack the trait nova-compute 34 puts on its own.  A PCI request
from an alias has a ``request_id``; Nova names its request groups
``<request_id>-<n>``, so a group whose suffix minus its last ``-<n>`` is
such an id gets the trait too (the PCI requests of ports, which have no
``alias_name``, are left out, as Nova leaves them).  A request whose
root already requires ``OWNER_NOVA`` (a live migration's reschedule) is
left as it is, without reading the version.  Below 73 Nova logs a
warning for every request; here once per minimum version seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import os_traits
from oslo_log import log as logging

from scheduler.placement import compute_versions
from scheduler.placement import request as request_lib

LOG = logging.getLogger(__name__)


def _pci_request_ids(spec_obj: Any) -> set[str]:
    """The ``request_id`` of the PCI requests from a flavor alias (Nova
    leaves out the ports', which have no ``alias_name``)."""
    pci = spec_obj.obj_get('pci_requests')
    requests = pci.obj_get('requests') if pci is not None else None
    return {request.request_id for request in requests or ()
            if request.obj_get('alias_name') is not None and
            request.obj_get('request_id')}


# The minimum versions below 73 already logged at WARNING.
_VERSIONS_LOGGED: set[int] = set()


def owner_nova(query: request_lib.ResourceRequest, spec_obj: Any,
               min_compute_version: Callable[[], int]) -> None:
    """Nova 34's ``owner_nova_filter``: ``OWNER_NOVA`` on the root and on
    the PCI request groups once every compute is at version 73 (see the
    module); the version is not read when the root already requires
    it."""
    if os_traits.OWNER_NOVA in query.root_required:
        return
    version = min_compute_version()
    if version < compute_versions.MIN_COMPUTE_VERSION_OWNER_TRAIT:
        # Nova logs it for every request; here once per version seen.
        level = logging.DEBUG if version in _VERSIONS_LOGGED else \
            logging.WARNING
        _VERSIONS_LOGGED.add(version)
        LOG.log(level, 'OWNER_NOVA trait not added to scheduling request: '
                'not all nova-compute services are upgraded (min_version=%d,'
                ' need %d).', version,
                compute_versions.MIN_COMPUTE_VERSION_OWNER_TRAIT)
        return
    query.root_required.add(os_traits.OWNER_NOVA)
    pci_ids = _pci_request_ids(spec_obj)
    for suffix, group in query.groups.items():
        if suffix and suffix.rsplit('-', 1)[0] in pci_ids:
            group.required.add(os_traits.OWNER_NOVA)
