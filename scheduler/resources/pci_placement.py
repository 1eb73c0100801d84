"""PCI devices tracked in Placement: which pools an allocation candidate
lets a PCI request use (Nova 34, ``nova.pci.stats``).

With ``[pci] report_in_placement`` a compute node reports each PCI
device (or each PF's VFs) as a child resource provider of its compute
node, and each of its pools carries that provider's uuid as the pool tag
``rp_uuid``.  With ``[filter_scheduler] pci_in_placement`` nova-api and
nova-conductor turn each device a flavor's PCI alias asks for into a
request group of its own (``RequestSpec.requested_resources``:
``requester_id`` ``"<InstancePCIRequest.request_id>-<n>"``, one unit of
the device's resource class), so that an allocation candidate's
``mappings`` say which provider serves each device.  Nova 34's
scheduler reads the option nowhere else: its filters use the mappings
whenever the request carries such groups.  Given a candidate's mappings
(``provider_mapping``: ``{requester_id: [provider uuid, ...]}``), a
PCI request:

* of a Neutron port (no ``alias_name``) may use any pool (Nova does not
  track those in Placement yet);
* else takes, per provider, as many devices as groups of the request
  (``requester_id`` starting with its ``request_id``) that provider
  serves, from the one pool tagged with that provider's uuid, which
  must hold that many free devices; pools without the tag are not
  used; two pools tagged with one provider fail the request (a
  warning), as Nova;
* without a mapping (None: a host checked as a whole), any pool.  Nova
  reads the ``rp_uuids`` its conductor writes into a request's spec
  after the claims on the compute node (and in the scheduler's
  consumption of a request without groups); its filters never do, nor
  does this scheduler.

``resource_class``, ``traits`` and ``rp_uuids`` in a request's spec
are matched by Placement (or by this module), never against a pool's
tags (``IGNORED_SPEC_KEYS``).
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# The pool tag naming the device's resource provider.
RP_UUID_TAG = 'rp_uuid'
# The spec keys Placement matches, not the pools' tags.
IGNORED_SPEC_KEYS = frozenset(('resource_class', 'traits', 'rp_uuids'))

ProviderMapping = Mapping[str, Sequence[str]]


def _get(request: Any, name: str) -> Any:
    if isinstance(request, dict):
        return request.get(name)
    return request.obj_get(name, None)


def request_providers(request: Any,
                      provider_mapping: ProviderMapping | None
                      ) -> list[str]:
    """The provider uuids ``request`` (an InstancePCIRequest or a dict
    of its fields) takes its devices from, once per device; [] when any
    pool will do (see the module)."""
    if _get(request, 'alias_name') is None:     # a Neutron port's
        return []
    request_id = _get(request, 'request_id')
    if not provider_mapping or not request_id:
        return []
    return [uuids[0] for group, uuids in provider_mapping.items()
            if group.startswith(request_id) and uuids]


def one_pool_per_provider(tags: Sequence[Mapping[str, Any]]) -> bool:
    """Whether no two pools (their ``tags``) carry one provider uuid
    (logged when they do)."""
    seen = collections.Counter(pool_tags[RP_UUID_TAG] for pool_tags in tags
                               if RP_UUID_TAG in pool_tags)
    split = sorted(uuid for uuid, count in seen.items() if count > 1)
    if split:
        LOG.warning('PCI pools split over one resource provider (%s): '
                    'the devices of one provider must be in one pool',
                    ', '.join(split))
    return not split


def take_allocated(counts: list[int], tags: Sequence[Mapping[str, Any]],
                   indexes: Sequence[int], providers: Sequence[str],
                   needed: int) -> bool:
    """Take the devices ``providers`` (a uuid per device) allocate from
    the pools at ``indexes`` (those the request matches, in order;
    ``counts`` and ``tags`` parallel to all pools; ``counts`` changed in
    place only on success).  False when a provider's pool lacks the
    devices or ``needed`` devices are not there in all."""
    if not one_pool_per_provider(tags):
        return False
    wanted = collections.Counter(providers)
    usable = [i for i in indexes
              if tags[i].get(RP_UUID_TAG) in wanted and
              counts[i] >= wanted[tags[i][RP_UUID_TAG]]]
    if sum(counts[i] for i in usable) < needed:
        return False
    for i in usable:
        counts[i] -= wanted.pop(tags[i][RP_UUID_TAG], 0)
    return True


def pci_groups(spec_obj: Any) -> tuple[int, int]:
    """``(flavor PCI requests, those with request groups)`` of
    ``spec_obj``: how many of its PCI requests come from a flavor alias,
    and how many of those have a group in ``requested_resources``
    (``requester_id`` starting with their ``request_id``)."""
    requests = spec_obj.obj_get('pci_requests')
    requests = (requests.obj_get('requests') or []) if requests else []
    flavor = [request for request in requests
              if _get(request, 'alias_name') is not None]
    groups = [group.obj_get('requester_id') or ''
              for group in spec_obj.obj_get('requested_resources') or []]
    grouped = [request for request in flavor
               if _get(request, 'request_id') and any(
                   group.startswith(_get(request, 'request_id'))
                   for group in groups)]
    return len(flavor), len(grouped)


_warned: set[bool] = set()


def check_option(spec_obj: Any, enabled: bool) -> None:
    """Log once (per setting) a request whose PCI request groups
    contradict ``[filter_scheduler] pci_in_placement`` (``enabled``):
    groups while it is off, none for a flavor's PCI request while it is
    on -- the conductor's setting then differs from this one (Nova
    wants one setting everywhere).  The request is scheduled as it is."""
    flavor, grouped = pci_groups(spec_obj)
    if enabled in _warned or not flavor or (grouped > 0) == enabled:
        return
    _warned.add(enabled)
    LOG.warning('[filter_scheduler] pci_in_placement is %s here, but '
                'instance %s comes with %d of its %d flavor PCI request(s) '
                'in Placement request groups: the conductor that sent it '
                'runs with the other setting (Nova wants one setting on '
                'nova-api, nova-conductor and the scheduler)',
                enabled, spec_obj.obj_get('instance_uuid'), grouped, flavor)
