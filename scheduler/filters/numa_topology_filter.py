"""NUMATopologyFilter: keep hosts the instance's NUMA topology fits on.

Follows Nova's NUMATopologyFilter (Ocata logic, and Nova 34's check of
each allocation candidate in Placement mode, step 4):

1. CPU policies.  The CPU policy and thread policy are read from the
   flavor extra specs ``hw:cpu_policy`` / ``hw:cpu_thread_policy`` and the
   image properties ``hw_cpu_policy`` / ``hw_cpu_thread_policy`` and
   combined with the rules Nova's API applies (``resolve_cpu_policies``):

   * CPU policy: a flavor ``dedicated`` wins over the image; a flavor
     ``shared`` with an image ``dedicated`` is a conflict; with no flavor
     value the image's applies; neither -> unset (shared);
   * thread policy (only meaningful with ``dedicated``; ignored
     otherwise): a flavor value of ``prefer`` or none lets the image's
     value win; any other flavor value must equal the image's when the
     image sets one, else it is a conflict;
   * a value outside ``shared``/``dedicated`` or ``prefer``/``isolate``/
     ``require`` is also a conflict.

   A conflict fails every host, with a warning (Nova's API would have
   refused such a request; a scheduler fed by another client cannot).
2. With the resolved policy ``dedicated`` + ``require`` and a host that
   has a topology, the host must have hyperthreading: a sibling group of
   more than one CPU in at least one cell (Ocata; Newton required every
   cell).  Otherwise fail.
3. A request with no NUMA topology (``spec_obj.numa_topology`` None)
   -> pass.  A request with one and a host without one -> fail.
4. Otherwise write ``host_state.limits['numa_topology'] =
   NUMATopologyLimits(cpu_allocation_ratio, ram_allocation_ratio)`` (the
   host's ratios: the compute node's, else ``[DEFAULT]
   cpu_allocation_ratio`` / ``ram_allocation_ratio``, else 16.0 / 1.5) and
   pass when ``scheduler.resources.numa.fit_instance_to_host`` fits the
   requested
   topology, with the request's PCI requests and the host's PCI pools.
   As Nova, the limits are written only when the host passes.  In
   Placement mode (``host_state.allocation_candidates`` set) the fit is
   tried with each allocation candidate's ``mappings`` (which decide the
   pools of PCI requests tracked in Placement,
   ``scheduler.resources.pci_placement``); only the candidates that fit
   are kept, and the host passes when one is left
   (``filters.filter_candidates``, Nova 34's ``CandidateFilterMixin``).

Instance cells without a ``cpu_policy`` / ``cpu_thread_policy`` get the
resolved ones for the fit (Nova's API always sets them; this only matters
for requests built elsewhere); cells that have them keep theirs.  The
request is never changed: the fit works on copies.  The memory of a
topology is in MiB and page sizes in KiB (``scheduler.resources.numa``).  An
unreadable host topology fails the host with a warning.  No options.
``RUN_ON_REBUILD`` is False (Nova Train and later).
"""

from oslo_log import log as logging

from scheduler import filters
from scheduler.objects import numa as numa_obj
from scheduler.resources import numa
from scheduler.resources import numa_topology
from scheduler.resources import pci_pools
from scheduler.resources import ratios

LOG = logging.getLogger(__name__)

_CPU_POLICIES = (numa.CPU_POLICY_SHARED, numa.CPU_POLICY_DEDICATED)
_THREAD_POLICIES = (numa.THREAD_POLICY_PREFER, numa.THREAD_POLICY_ISOLATE,
                    numa.THREAD_POLICY_REQUIRE)


class CPUPolicyConflict(ValueError):
    """The flavor and image CPU policies cannot be combined."""


def _image_property(spec_obj, name):
    image = spec_obj.obj_get('image')
    if image is None:
        return None
    props = image.obj_get('properties')
    return props.get(name) if props is not None else None


def resolve_cpu_policies(spec_obj):
    """``(cpu_policy, cpu_thread_policy)`` of the request, from its flavor
    extra specs and image properties (rules in the module docstring).

    Either value may be None (unset).  Raises ``CPUPolicyConflict``.
    """
    extra_specs = spec_obj.flavor.obj_get('extra_specs') or {}
    flavor_policy = extra_specs.get('hw:cpu_policy')
    image_policy = _image_property(spec_obj, 'hw_cpu_policy')
    for source, value in (('flavor', flavor_policy), ('image', image_policy)):
        if value is not None and value not in _CPU_POLICIES:
            raise CPUPolicyConflict('invalid %s CPU policy %r'
                                    % (source, value))
    if flavor_policy == numa.CPU_POLICY_DEDICATED:
        cpu_policy = flavor_policy
    elif flavor_policy == numa.CPU_POLICY_SHARED:
        if image_policy == numa.CPU_POLICY_DEDICATED:
            raise CPUPolicyConflict('the image asks for dedicated CPUs but '
                                    'the flavor forbids them')
        cpu_policy = flavor_policy
    else:
        cpu_policy = image_policy

    flavor_thread = extra_specs.get('hw:cpu_thread_policy')
    image_thread = _image_property(spec_obj, 'hw_cpu_thread_policy')
    for source, value in (('flavor', flavor_thread), ('image', image_thread)):
        if value is not None and value not in _THREAD_POLICIES:
            raise CPUPolicyConflict('invalid %s CPU thread policy %r'
                                    % (source, value))
    if cpu_policy != numa.CPU_POLICY_DEDICATED:
        return cpu_policy, None
    if flavor_thread in (None, numa.THREAD_POLICY_PREFER):
        thread_policy = image_thread or flavor_thread
    elif image_thread and image_thread != flavor_thread:
        raise CPUPolicyConflict('the image CPU thread policy %r conflicts '
                                'with the flavor one %r'
                                % (image_thread, flavor_thread))
    else:
        thread_policy = flavor_thread
    return cpu_policy, thread_policy


def _with_policies(topology, cpu_policy, thread_policy):
    """``topology``, or a copy whose cells lacking a policy get the
    resolved ones."""
    missing = [cell for cell in topology.cells
               if (cpu_policy and cell.obj_get('cpu_policy') is None) or
               (thread_policy and cell.obj_get('cpu_thread_policy') is None)]
    if not missing:
        return topology
    topology = topology.obj_clone()
    for cell in topology.cells:
        if cpu_policy and cell.obj_get('cpu_policy') is None:
            cell.cpu_policy = cpu_policy
        if (thread_policy and cell.obj_get('cpu_thread_policy') is None and
                cell.obj_get('cpu_policy') == numa.CPU_POLICY_DEDICATED):
            cell.cpu_thread_policy = thread_policy
    return topology


class NUMATopologyFilter(filters.BaseHostFilter):
    """Pass hosts on which the requested NUMA topology fits."""

    HOST_LOCAL = True

    RUN_ON_REBUILD = False

    def __init__(self):
        self._last_conflict = None

    def _warn_conflict(self, spec_obj, error):
        # Warn once per request and reason, not once per host.
        key = (spec_obj.obj_get('instance_uuid'), str(error))
        if key != self._last_conflict:
            self._last_conflict = key
            LOG.warning('Instance %(uuid)s cannot be scheduled: %(error)s',
                        {'uuid': key[0], 'error': error})

    explain_label = 'NUMA topology does not fit'

    def explain(self, host_state, spec_obj):
        """Generic: a CPU policy conflict, or no fit of the topology."""
        try:
            resolve_cpu_policies(spec_obj)
        except CPUPolicyConflict as exc:
            return 'CPU policy conflict: %s' % exc
        if spec_obj.obj_get('numa_topology') is None:
            return "CPU policy 'require' threads, the host has none"
        return ('the requested NUMA topology (CPU, RAM, pinning, '
                'hugepages, PCI) does not fit the host\'s NUMA cells')

    def host_passes(self, host_state, spec_obj):
        try:
            cpu_policy, thread_policy = resolve_cpu_policies(spec_obj)
        except CPUPolicyConflict as exc:
            self._warn_conflict(spec_obj, exc)
            return False
        requested = spec_obj.obj_get('numa_topology')
        try:
            host_topology = numa_topology.parse_host_topology(
                host_state.numa_topology)
        except numa_topology.InvalidNUMATopology as exc:
            LOG.warning('%(host_state)s: unreadable NUMA topology: '
                        '%(error)s', {'host_state': host_state,
                                      'error': exc})
            return requested is None

        if (host_topology is not None and
                cpu_policy == numa.CPU_POLICY_DEDICATED and
                thread_policy == numa.THREAD_POLICY_REQUIRE and
                not numa.host_has_hyperthreading(host_topology)):
            LOG.debug("%(host_state)s fails CPU policy requirements: no "
                      "hyperthreading, but the 'require' thread policy was "
                      "requested", {'host_state': host_state})
            return False

        if requested is None:
            return True
        if host_topology is None:
            LOG.debug('%(host_state)s has no NUMA topology while the '
                      'instance specified one', {'host_state': host_state})
            return False

        limits = numa_obj.NUMATopologyLimits(
            cpu_allocation_ratio=ratios.host_allocation_ratio(
                host_state, 'cpu_allocation_ratio'),
            ram_allocation_ratio=ratios.host_allocation_ratio(
                host_state, 'ram_allocation_ratio'))
        requested = _with_policies(requested, cpu_policy, thread_policy)
        pci_requests = spec_obj.obj_get('pci_requests')

        def fits(mapping):
            return numa.fit_instance_to_host(
                host_topology, requested, limits=limits,
                pci_requests=pci_requests, pci_stats=pools,
                provider_mapping=mapping) is not None

        try:
            # Read once for every candidate (None: no pools).
            pools = (pci_pools.parse_pools(host_state.pci_stats)
                     if host_state.pci_stats is not None and
                     pci_pools.request_list(pci_requests) else None)
            fitted = filters.filter_candidates(host_state, fits)
        except pci_pools.InvalidPciPools as exc:
            LOG.warning('%(host_state)s: unreadable PCI pools: %(error)s',
                        {'host_state': host_state, 'error': exc})
            return False
        if not fitted:
            LOG.debug('%(host_state)s fails the NUMA topology requirements; '
                      'the instance does not fit on the host',
                      {'host_state': host_state})
            return False
        host_state.limits['numa_topology'] = limits
        return True
