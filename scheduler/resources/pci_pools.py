"""PCI device pools of a compute node, and whether they satisfy requests.

A compute node reports its assignable PCI devices grouped in **pools**:
devices with the same ``vendor_id``, ``product_id``, ``numa_node`` and
tags (``dev_type``, ``physical_network``, ...) form one pool with a
``count`` of free devices.  The ``compute_nodes.pci_stats`` column holds
them in one of two JSON shapes, both accepted by
``parse_pools``:

* Nova's ``PciDevicePoolList`` versioned-object primitive::

      {"nova_object.name": "PciDevicePoolList",
       "nova_object.data": {"objects": [
           {"nova_object.name": "PciDevicePool",
            "nova_object.data": {"vendor_id": "8086", "product_id": "1520",
                                 "numa_node": 0, "count": 4,
                                 "tags": {"dev_type": "type-VF"}}}]}}

* the legacy list, where every key other than ``vendor_id``,
  ``product_id``, ``numa_node`` and ``count`` is a tag::

      [{"vendor_id": "8086", "product_id": "1520", "numa_node": 0,
        "count": 4, "dev_type": "type-VF"}]

A request (``InstancePCIRequest``, built by Nova's API from the flavor's
``pci_passthrough:alias`` extra spec) asks for ``count``
devices matching **any** of the dicts in its ``spec`` list.  Rules, after
Nova's ``PciDeviceStats`` (Ocata, plus the Pike/Queens refinements noted):

* a spec matches a pool when every ``key: value`` of the spec equals the
  pool's field of that name or its tag of that name.  ``vendor_id`` and
  ``product_id`` compare as hexadecimal numbers, case-insensitively and
  with an optional ``0x`` prefix (``"0x8086"`` equals ``"8086"``); other
  keys compare as strings (so ``numa_node: "0"`` matches the integer 0 --
  Nova compares raw values, which never match there).  A spec value of
  None matches a pool that lacks the key;
* pools tagged ``dev_type: type-PF`` are used only by a request with a
  spec that asks for ``dev_type: type-PF`` (Nova, Pike);
* with ``numa_cells`` (the host NUMA cell ids an instance was fitted to),
  the request's ``numa_policy`` restricts the pools (Nova, Queens):
  ``required``: pools on those cells only; ``legacy`` (and unset): pools
  on those cells or with no NUMA node; ``preferred``: pools on those
  cells first, then any pool;
* requests are served in order, greedily: each one takes its devices from
  the matching pools in pool order (Nova's greedy algorithm, so two
  requests with overlapping specs may fail where another assignment would
  have succeeded, exactly as in Nova);
* with PCI devices in Placement (Nova 34, ``scheduler.resources.
  pci_placement``): the spec keys ``resource_class``, ``traits`` and
  ``rp_uuids`` are not matched against the pools, and with an
  allocation candidate's ``provider_mapping`` a request takes its
  devices from the pools tagged ``rp_uuid`` with the providers that
  candidate maps its groups to.

``support_requests`` answers on a copy of the counts; ``apply_requests``
consumes the devices, and unlike Nova (which can leave a partial
consumption behind when it raises) it changes nothing when the requests
cannot all be met.  Pools are plain dataclasses, not oslo objects;
``pools_to_raw`` writes the counts back in the shape the pools came in.
"""

import copy
import dataclasses
import json
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from scheduler import exception
from scheduler.resources import pci_placement

# The pool fields; every other key of a legacy pool dict is a tag.
_POOL_FIELDS = ('vendor_id', 'product_id', 'numa_node', 'count')
_HEX_KEYS = frozenset(('vendor_id', 'product_id'))
_DATA = 'nova_object.data'

DEV_TYPE_PF = 'type-PF'
NUMA_POLICY_REQUIRED = 'required'
NUMA_POLICY_LEGACY = 'legacy'
NUMA_POLICY_PREFERRED = 'preferred'


class InvalidPciPools(exception.Invalid):
    """A ``pci_stats`` value that is not one of the two pool shapes."""

    msg_fmt = 'Invalid PCI device pools: %(reason)s'


class PciDeviceRequestFailed(exception.SchedulerException):
    """The pools cannot satisfy the requests (Nova's exception name)."""

    msg_fmt = 'PCI device request %(requests)s failed'


@dataclasses.dataclass
class PciDevicePool:
    """One pool: ``count`` free devices sharing vendor, product, NUMA node
    and tags.  ``count`` is the only field that consumption changes."""

    vendor_id: str | None
    product_id: str | None
    numa_node: int | None
    count: int
    tags: dict = dataclasses.field(default_factory=dict)

    def get(self, key: str) -> Any:
        """The pool's field ``key``, else its tag ``key``, else None."""
        if key in _POOL_FIELDS:
            return getattr(self, key)
        return self.tags.get(key)


# -- parsing and writing back ----------------------------------------------

def _as_int_or_none(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidPciPools(reason='%s is a boolean' % what)
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise InvalidPciPools(reason='%s=%r is not an integer'
                              % (what, value)) from exc


def _pool_from_dict(entry: Any, legacy: bool) -> PciDevicePool:
    if not isinstance(entry, dict):
        raise InvalidPciPools(reason='a pool is not an object: %r' % (entry,))
    data = entry.get(_DATA, entry)
    if not isinstance(data, dict):
        raise InvalidPciPools(reason='a pool is not an object: %r' % (entry,))
    count = _as_int_or_none(data.get('count', 0), 'count') or 0
    if count < 0:
        raise InvalidPciPools(reason='negative count %d' % count)
    if legacy and _DATA not in entry:
        tags = {key: value for key, value in data.items()
                if key not in _POOL_FIELDS and key != 'tags'}
        tags.update(data.get('tags') or {})
    else:
        tags = dict(data.get('tags') or {})
    vendor_id = data.get('vendor_id')
    product_id = data.get('product_id')
    return PciDevicePool(
        vendor_id=None if vendor_id is None else str(vendor_id),
        product_id=None if product_id is None else str(product_id),
        numa_node=_as_int_or_none(data.get('numa_node'), 'numa_node'),
        count=count, tags=tags)


def _decode(value: Any) -> Any:
    if isinstance(value, (bytes, str)):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise InvalidPciPools(reason='not JSON: %s' % exc) from exc
    return value


def parse_pools(value: Any) -> list[PciDevicePool]:
    """The pools of a ``pci_stats`` value, in their stored order.

    ``value``: a JSON string, the decoded JSON (a legacy list or a
    ``PciDevicePoolList`` primitive), or already a list of
    ``PciDevicePool`` (returned as a new list of copies).  None gives [].
    Raises ``InvalidPciPools`` for anything else.
    """
    value = _decode(value)
    if value is None:
        return []
    if isinstance(value, dict):
        data = value.get(_DATA, value)
        objs = data.get('objects') if isinstance(data, dict) else None
        if not isinstance(objs, list):
            raise InvalidPciPools(reason='no "objects" list in %r' % (value,))
        return [_pool_from_dict(entry, legacy=False) for entry in objs]
    if isinstance(value, list):
        return [dataclasses.replace(entry, tags=dict(entry.tags))
                if isinstance(entry, PciDevicePool)
                else _pool_from_dict(entry, legacy=True)
                for entry in value]
    raise InvalidPciPools(reason='unexpected %s' % type(value).__name__)


def pools_to_raw(pools: Sequence[PciDevicePool], like: Any) -> Any:
    """``pools`` in the shape of ``like`` (the value they were parsed from):
    the same JSON string / primitive / legacy list with the counts
    updated, other keys untouched.  ``like`` None gives a legacy list."""
    if isinstance(like, (bytes, str)):
        return json.dumps(pools_to_raw(pools, _decode(like)))
    if isinstance(like, dict):
        raw = copy.deepcopy(like)
        objs = raw[_DATA]['objects'] if _DATA in raw else raw['objects']
        if len(objs) != len(pools):
            raise ValueError('%d pools for %d stored pools'
                             % (len(pools), len(objs)))
        for entry, pool in zip(objs, pools, strict=True):
            entry.get(_DATA, entry)['count'] = pool.count
        return raw
    if isinstance(like, list) and all(isinstance(e, dict) for e in like):
        if len(like) != len(pools):
            raise ValueError('%d pools for %d stored pools'
                             % (len(pools), len(like)))
        raw_list = copy.deepcopy(like)
        for entry, pool in zip(raw_list, pools, strict=True):
            entry.get(_DATA, entry)['count'] = pool.count
        return raw_list
    if isinstance(like, list):
        return [dataclasses.replace(p, tags=dict(p.tags)) for p in pools]
    return [dict(pool.tags, vendor_id=pool.vendor_id,
                 product_id=pool.product_id, numa_node=pool.numa_node,
                 count=pool.count) for pool in pools]


# -- matching ---------------------------------------------------------------

def _hex_key(value: object) -> int | str:
    text = str(value).strip().lower()
    if text.startswith('0x'):
        text = text[2:]
    try:
        return int(text, 16)
    except ValueError:
        return text


def spec_matches_pool(spec: Mapping[str, Any], pool: PciDevicePool) -> bool:
    """Whether every ``key: value`` of ``spec`` holds for ``pool``."""
    for key, wanted in spec.items():
        if key in pci_placement.IGNORED_SPEC_KEYS:
            continue
        have = pool.get(key)
        if wanted is None or have is None:
            if wanted is not have:
                return False
        elif key in _HEX_KEYS:
            if _hex_key(have) != _hex_key(wanted):
                return False
        elif str(have) != str(wanted):
            return False
    return True


def _request_fields(request: Any) -> tuple[int, list[Any], Any]:
    """``(count, specs, numa_policy)`` of an InstancePCIRequest or a dict
    with the same keys."""
    if isinstance(request, dict):
        get = request.get
    else:
        def get(name: str, default: Any = None) -> Any:
            return request.obj_get(name, default)
    return (int(get('count', 0) or 0), list(get('spec', None) or []),
            get('numa_policy', None))


def request_list(requests: Any) -> list[Any]:
    """The requests as a list: accepts an ``InstancePCIRequests``, a list
    of ``InstancePCIRequest`` (or dicts), or None (gives [])."""
    if requests is None:
        return []
    if hasattr(requests, 'obj_get') and hasattr(requests, 'fields') and \
            'requests' in requests.fields:
        return list(requests.obj_get('requests') or [])
    return list(requests)


def _cell_ids(numa_cells: Iterable[Any] | None) -> set[Any] | None:
    if numa_cells is None:
        return None
    return {getattr(cell, 'id', cell) for cell in numa_cells}


def _candidate_indexes(pools: Sequence[PciDevicePool], request: Any,
                       cell_ids: set[Any] | None) -> list[int]:
    """Indexes of the pools ``request`` may use, in the order to use them."""
    _count, specs, numa_policy = _request_fields(request)
    wants_pf = any(spec.get('dev_type') == DEV_TYPE_PF for spec in specs)
    matching = [i for i, pool in enumerate(pools)
                if any(spec_matches_pool(spec, pool) for spec in specs) and
                (wants_pf or pool.tags.get('dev_type') != DEV_TYPE_PF)]
    if cell_ids is None:
        return matching
    affine = [i for i in matching if pools[i].numa_node in cell_ids]
    if numa_policy == NUMA_POLICY_REQUIRED:
        return affine
    if numa_policy == NUMA_POLICY_PREFERRED:
        return affine + [i for i in matching if i not in affine]
    return [i for i in matching
            if pools[i].numa_node is None or pools[i].numa_node in cell_ids]


def _allocate(counts: list[int], pools: Sequence[PciDevicePool],
              requests: Iterable[Any], cell_ids: set[Any] | None,
              provider_mapping: pci_placement.ProviderMapping | None = None
              ) -> bool:
    """Take every request's devices from ``counts`` (a list parallel to
    ``pools``, changed in place).  False as soon as one cannot be met."""
    for request in requests:
        needed = _request_fields(request)[0]
        indexes = _candidate_indexes(pools, request, cell_ids)
        providers = pci_placement.request_providers(request,
                                                    provider_mapping)
        if providers:
            if not pci_placement.take_allocated(
                    counts, [pool.tags for pool in pools], indexes,
                    providers, needed):
                return False
            continue
        if sum(counts[i] for i in indexes) < needed:
            return False
        for i in indexes:
            if needed <= 0:
                break
            taken = min(counts[i], needed)
            counts[i] -= taken
            needed -= taken
    return True


def support_requests(pools: Any, requests: Any,
                     numa_cells: Iterable[Any] | None = None,
                     provider_mapping: pci_placement.ProviderMapping |
                     None = None) -> bool:
    """Whether ``pools`` can satisfy every request, in order.

    ``pools``: anything ``parse_pools`` accepts; ``requests``: anything
    ``request_list`` accepts; ``numa_cells``: host NUMA cell ids (or
    objects with an ``id``, e.g. fitted InstanceNUMACells) for the NUMA
    policy rules, or None for no NUMA restriction; ``provider_mapping``:
    an allocation candidate's ``mappings`` (``{group suffix: [provider
    uuid]}``), whose PCI groups decide the pools each request uses
    (``scheduler.resources.pci_placement``), or None.  Changes nothing.
    """
    if not (isinstance(pools, list) and
            all(isinstance(pool, PciDevicePool) for pool in pools)):
        pools = parse_pools(pools)      # (parsed pools are only read)
    counts = [pool.count for pool in pools]
    return _allocate(counts, pools, request_list(requests),
                     _cell_ids(numa_cells), provider_mapping)


def apply_requests(pools: Sequence[PciDevicePool], requests: Any,
                   numa_cells: Iterable[Any] | None = None,
                   provider_mapping: pci_placement.ProviderMapping |
                   None = None) -> None:
    """Consume the requested devices from ``pools`` (a list of
    ``PciDevicePool``, changed in place); arguments as
    ``support_requests``.

    All or nothing: raises ``PciDeviceRequestFailed`` and changes no count
    when the requests cannot all be met.
    """
    requests = request_list(requests)
    counts = [pool.count for pool in pools]
    if not _allocate(counts, pools, requests, _cell_ids(numa_cells),
                     provider_mapping):
        raise PciDeviceRequestFailed(
            requests=[_request_fields(r)[:2] for r in requests])
    for pool, count in zip(pools, counts, strict=True):
        pool.count = count


def matching_count(pools: Any,
                   spec_list: Iterable[Mapping[str, Any]]) -> int:
    """How many free devices match any spec of ``spec_list`` (a helper for
    weighers and tests)."""
    return sum(pool.count for pool in parse_pools(pools)
               if any(spec_matches_pool(spec, pool) for spec in spec_list))
