"""CPU pinning: the PCPUs, VCPUs and hyperthreading trait that a
flavor's and an image's CPU policies ask Placement for, by Nova 34's
rules (see ``scheduler.placement.hardware`` for how a setting is read).

* ``cpu_policy``: ``shared``, ``dedicated`` or ``mixed``.  An invalid
  value on either side is refused.  A flavor policy wins over the
  image's, but a flavor saying ``shared`` refuses an image saying
  ``dedicated`` or ``mixed``, and a flavor saying ``mixed`` refuses an
  image saying ``dedicated``; without a flavor policy the image's
  applies.  ``dedicated`` asks one PCPU per flavor vCPU instead of
  VCPUs.  ``mixed`` asks as many PCPUs as the flavor's
  ``hw:cpu_dedicated_mask`` selects (else, under ``hw:cpu_realtime``,
  as many as the realtime mask selects) and VCPUs for the rest.
* ``hw:emulator_threads_policy`` (flavor only): ``share`` or
  ``isolate``; ``isolate`` adds one PCPU to a pinned request.
* ``cpu_thread_policy``: ``prefer``, ``isolate`` or ``require``.  A
  flavor policy wins; one other than ``prefer`` refuses a different
  image policy, and so does an empty one (the exception to the rule
  above).  Without a flavor policy the image's applies.  ``require``
  requires and ``isolate`` forbids ``HW_CPU_HYPERTHREADING``, whatever
  the CPU policy.
* CPU masks are lists of CPU numbers, ``a-b`` ranges and ``^`` excluded
  numbers or ranges; a mask starting with ``^`` excludes from all the
  flavor's vCPUs.  The dedicated mask must select some but not all of
  the flavor's vCPUs, and only those.  The realtime mask (the image's
  before the flavor's; all vCPUs without one) must select some of the
  flavor's vCPUs, and only those, and not all of them unless an
  emulator threads policy is set.
"""

from __future__ import annotations

import os_traits
from oslo_utils import strutils

from scheduler.placement.hardware import ExtraSpecs
from scheduler.placement.hardware import HardwareRequest
from scheduler.placement.hardware import HardwareRequestError
from scheduler.placement.hardware import ImageProps
from scheduler.placement.hardware import add_trait
from scheduler.placement.hardware import both
from scheduler.placement.hardware import check_choice

CPU_POLICIES = ('dedicated', 'shared', 'mixed')
THREAD_POLICIES = ('prefer', 'isolate', 'require')
EMULATOR_THREADS_POLICIES = ('share', 'isolate')

# A flavor CPU policy and the image CPU policies it refuses.
CPU_POLICY_REFUSES = {
    'dedicated': (),
    'mixed': ('dedicated',),
    'shared': ('dedicated', 'mixed'),
}
# The thread policies that ask something of HW_CPU_HYPERTHREADING.
THREAD_POLICY_TRAIT = {'require': 'required', 'isolate': 'forbidden'}


def pinning_request(vcpus: int, extra_specs: ExtraSpecs,
                    image_props: ImageProps) -> HardwareRequest:
    """The CPU pinning part of a request of ``vcpus`` vCPUs.

    ``extra_specs`` are the flavor's extra specs (strings),
    ``image_props`` the image's properties by ImageMetaProps field name.
    The result has ``pcpus`` set for a ``dedicated`` or ``mixed`` CPU
    policy (``vcpus`` too for ``mixed``), ``cpu_pinning_requested`` for
    ``dedicated``, and ``HW_CPU_HYPERTHREADING`` required or forbidden
    by the thread policy.

    :raises HardwareRequestError: an invalid CPU, thread or emulator
        threads policy (``InvalidCPUAllocationPolicy``,
        ``InvalidCPUThreadAllocationPolicy``,
        ``InvalidEmulatorThreadsPolicy``); an image policy the flavor
        refuses (``ImageCPUPinningForbidden``,
        ``ImageCPUThreadPolicyForbidden``); for ``mixed``, a mask that
        does not parse (``Invalid``) or selects the wrong CPUs
        (``InvalidMixedInstanceDedicatedMask``,
        ``RealtimeMaskNotFoundOrInvalid``).
    """
    policy = _cpu_policy(extra_specs, image_props)
    thread_policy = _thread_policy(extra_specs, image_props)
    emulator_policy = _emulator_threads_policy(extra_specs)
    request = HardwareRequest()
    add_trait(request, os_traits.HW_CPU_HYPERTHREADING,
               THREAD_POLICY_TRAIT.get(thread_policy or ''))
    if policy == 'dedicated':
        request.cpu_pinning_requested = True
        pinned = vcpus
    elif policy == 'mixed':
        pinned = _mixed_pinned_count(vcpus, extra_specs, image_props,
                                     emulator_policy)
        request.vcpus = vcpus - pinned
    else:
        return request
    if emulator_policy == 'isolate':
        pinned += 1
    request.pcpus = pinned
    return request



def _cpu_policy(extra_specs: ExtraSpecs,
                image_props: ImageProps) -> str | None:
    flavor, image = both(extra_specs, image_props, 'cpu_policy')
    for value in (flavor, image):
        if value:
            check_choice(value, CPU_POLICIES, 'InvalidCPUAllocationPolicy',
                          'The CPU policy')
    if flavor in CPU_POLICY_REFUSES:
        if image in CPU_POLICY_REFUSES[flavor]:
            raise HardwareRequestError(
                'ImageCPUPinningForbidden',
                'The flavor CPU policy %s refuses the image CPU policy %s.'
                % (flavor, image))
        return flavor
    return image if image in CPU_POLICIES else None


def _thread_policy(extra_specs: ExtraSpecs,
                   image_props: ImageProps) -> str | None:
    flavor, image = both(extra_specs, image_props, 'cpu_thread_policy')
    for value in (flavor, image):
        if value:
            check_choice(value, THREAD_POLICIES,
                          'InvalidCPUThreadAllocationPolicy',
                          'The CPU thread policy')
    if flavor is None or flavor == 'prefer':
        return flavor or image
    if image and image != flavor:
        raise HardwareRequestError(
            'ImageCPUThreadPolicyForbidden',
            'The flavor CPU thread policy %r refuses the image CPU thread '
            'policy %s.' % (flavor, image))
    return flavor


def _emulator_threads_policy(extra_specs: ExtraSpecs) -> str | None:
    policy = extra_specs.get('hw:emulator_threads_policy')
    if not policy:
        return None
    check_choice(policy, EMULATOR_THREADS_POLICIES,
                  'InvalidEmulatorThreadsPolicy',
                  'The emulator threads policy')
    return policy


def _mixed_pinned_count(vcpus: int, extra_specs: ExtraSpecs,
                        image_props: ImageProps,
                        emulator_policy: str | None) -> int:
    """How many of a ``mixed`` request's vCPUs are pinned."""
    dedicated = _dedicated_cpus(vcpus, extra_specs)
    realtime = _realtime_cpus(vcpus, extra_specs, image_props,
                              emulator_policy)
    return len(dedicated or realtime or ())


def _dedicated_cpus(vcpus: int, extra_specs: ExtraSpecs) -> set[int] | None:
    mask = extra_specs.get('hw:cpu_dedicated_mask')
    if not mask:
        return None
    cpus = _mask_cpus(mask, vcpus)
    everything = set(range(vcpus))
    if not cpus or cpus >= everything or not cpus <= everything:
        raise HardwareRequestError(
            'InvalidMixedInstanceDedicatedMask',
            'hw:cpu_dedicated_mask %r must select some but not all of the '
            '%d vCPUs of the flavor, and no others.' % (mask, vcpus))
    return cpus


def _realtime_cpus(vcpus: int, extra_specs: ExtraSpecs,
                   image_props: ImageProps,
                   emulator_policy: str | None) -> set[int] | None:
    if not strutils.bool_from_string(extra_specs.get('hw:cpu_realtime')):
        return None
    flavor_mask, image_mask = both(extra_specs, image_props,
                                    'cpu_realtime_mask')
    mask = image_mask or flavor_mask
    everything = set(range(vcpus))
    cpus = _mask_cpus(mask, vcpus) if mask else set(everything)
    if (not cpus or not cpus <= everything or
            (cpus == everything and not emulator_policy)):
        raise HardwareRequestError(
            'RealtimeMaskNotFoundOrInvalid',
            'The realtime mask %r must select some of the %d vCPUs of the '
            'flavor, and no others, and leave one out unless an emulator '
            'threads policy is set.' % (mask, vcpus))
    return cpus


def _mask_cpus(mask: str, vcpus: int) -> set[int]:
    """The CPUs of a mask; one starting with ``^`` excludes from all
    ``vcpus``."""
    if mask.strip().startswith('^'):
        mask = '0-%d,%s' % (vcpus - 1, mask)
    return parse_cpu_set(mask)


def parse_cpu_set(spec: str) -> set[int]:
    """The CPU numbers of a comma-separated list of numbers (``3``),
    ranges (``2-5``) and exclusions (``^3``, ``^2-5``); empty items are
    skipped.  Exclusions apply to the whole list.

    :raises HardwareRequestError: (``Invalid``) an item that is not a
        number or a range, or a range that ends before it starts.
    """
    selected: set[int] = set()
    excluded: set[int] = set()
    for item in (part.strip() for part in spec.split(',')):
        if not item:
            continue
        start, dash, end = item.partition('-')
        target = selected
        if start.startswith('^'):
            target = excluded
            start = start[1:]
        if not dash:
            target.add(_cpu_number(start, item))
            continue
        first, last = _cpu_number(start, item), _cpu_number(end, item)
        if first > last:
            raise HardwareRequestError(
                'Invalid', 'The CPU range %r ends before it starts.' % item)
        target.update(range(first, last + 1))
    return selected - excluded


def _cpu_number(text: str, item: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise HardwareRequestError(
            'Invalid', 'The CPU list item %r is not a CPU number or range.'
            % item) from None

