"""The capacity rule: whether a request's resources fit on a node.

For one resource of a node, with ``total`` its physical amount, ``ratio``
its allocation ratio, ``used`` what is counted against it and
``requested`` what the request asks for::

    fits  <=>  total >= requested  and  total * ratio - used >= requested

An instance may overcommit against other instances, never against
itself (Nova's RamFilter, CoreFilter and DiskFilter since Newton; in
Placement terms, ``total * allocation_ratio - reserved`` is the
capacity and ``max_unit`` the node's size).  A node reporting 0 vCPUs is
not checked for CPU (Nova's CoreFilter lets it pass).  The functions
take scalars or NumPy arrays alike.

``claim_amounts`` says what a scheduler claims for one instance, and
``CLAIMED`` names the HostState attributes (and HostTable columns) the
claims count, so the check of a candidate before ranking
(``claim_fits``) is the check the database claim makes.
"""

import typing

import numpy as np


class Amounts(typing.NamedTuple):
    """What one instance takes: vCPUs, RAM in MiB, local disk in GiB."""

    vcpus: int
    memory_mb: int
    disk_gb: int


class Claimed(typing.NamedTuple):
    """One claimed resource: its ``Amounts`` field and the HostState
    attributes (and HostTable columns) of its total, its use and its
    allocation ratio."""

    name: str
    total: str
    used: str
    ratio: str


# The resources a claim enforces, in the claim's terms.  ``used`` is the
# node's reported use plus its open claims plus this view's consumption.
CLAIMED = (
    Claimed('vcpus', 'vcpus_total', 'vcpus_used', 'cpu_allocation_ratio'),
    Claimed('memory_mb', 'total_usable_ram_mb', 'memory_mb_used',
            'ram_allocation_ratio'),
    Claimed('disk_gb', 'total_usable_disk_gb', 'local_gb_used',
            'disk_allocation_ratio'),
)


def free(total, used, ratio):
    """What is left to give: ``total * ratio - used`` (negative when
    overcommitted)."""
    return total * ratio - used


def fits(total, used, ratio, requested):
    """Whether ``requested`` more fits (the rule of this module; no
    special case for a zero total)."""
    return (total >= requested) & (free(total, used, ratio) >= requested)


def vcpus_fit(total, used, ratio, requested):
    """``fits`` for vCPUs: a node reporting 0 vCPUs always passes."""
    return (total == 0) | fits(total, used, ratio, requested)


def resource_fits(name, total, used, ratio, requested):
    """``fits`` for the claimed resource ``name`` (``vcpus_fit`` for
    ``'vcpus'``)."""
    check = vcpus_fit if name == 'vcpus' else fits
    return check(total, used, ratio, requested)


def claim_amounts(spec_obj):
    """The ``Amounts`` a claim takes for one instance of ``spec_obj``: the
    flavor's vCPUs and RAM, and its root plus ephemeral disk (swap is not
    local disk a claim counts; a boot-from-volume request's root disk is
    not local: ``RequestSpec.local_root_gb``)."""
    flavor = spec_obj.flavor
    return Amounts(flavor.vcpus, flavor.memory_mb,
                   spec_obj.local_root_gb + flavor.ephemeral_gb)


def claim_fits(get, amounts):
    """Whether ``amounts`` fit by every rule a claim enforces.

    ``get(attribute)`` reads a ``CLAIMED`` attribute: of one HostState
    (scalars, returns a bool) or of a HostTable's rows (arrays, returns
    a bool array).
    """
    result = True
    for resource in CLAIMED:
        result = result & resource_fits(
            resource.name, get(resource.total), get(resource.used),
            get(resource.ratio), getattr(amounts, resource.name))
    return np.asarray(result) if np.ndim(result) else bool(result)


def shortfalls(get, amounts):
    """The claimed resources ``amounts`` do not fit in, each as
    ``(name, free, requested, total, ratio)``; empty when they fit.
    ``get`` reads scalars of one node (as for ``claim_fits``)."""
    found = []
    for resource in CLAIMED:
        total, used, ratio = (get(resource.total), get(resource.used),
                              get(resource.ratio))
        requested = getattr(amounts, resource.name)
        if not resource_fits(resource.name, total, used, ratio, requested):
            found.append((resource.name, free(total, used, ratio),
                          requested, total, ratio))
    return found
