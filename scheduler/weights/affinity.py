"""Soft (anti-)affinity weighers for server groups.

Follow Nova's ServerGroupSoftAffinityWeigher and
ServerGroupSoftAntiAffinityWeigher (Mitaka onwards):
a group with the ``soft-affinity`` policy prefers the hosts already
running its members, one with ``soft-anti-affinity`` the hosts running
the fewest.  Unlike the affinity filters they never reject a host.
"""

import numpy as np
from oslo_log import log as logging

from scheduler import weights

LOG = logging.getLogger(__name__)


def group_members_on_host(host_state, spec_obj, policy):
    """How many members of the request's server group run on the host,
    when the group's policy is ``policy``; 0 otherwise (no group, or a
    group with another policy)."""
    group = spec_obj.get('instance_group')
    if group is None or group.policy_name != policy:
        return 0
    members = set(group.obj_get('members') or ())
    return len(members.intersection(host_state.instances))


class _SoftAffinityWeigherBase(weights.BaseHostWeigher):
    """Raw weight: ``sign`` x the number of group members on the host,
    for groups with the policy ``policy``.

    The multiplier option has ``min=0.0`` (Nova since Stein), so a
    negative configured value is already rejected by the configuration;
    an aggregate's override (``<option>`` key, minimum over the host's
    aggregates) is not range-checked, so a negative effective multiplier,
    which turns the weigher into its opposite, is still used but warned
    about once per weigher, as Ocata warned about the option.
    """

    HOST_LOCAL = True
    NEVER_RAISES = True

    policy: str | None = None
    sign = 1
    _warned_negative = False

    def weight_multiplier(self, host_state):
        multiplier = super().weight_multiplier(host_state)
        if multiplier < 0 and not self._warned_negative:
            LOG.warning('A negative %(option)s (%(value)s) makes the '
                        '%(policy)s weigher work against its policy; only '
                        'values >= 0 are meaningful.',
                        {'option': self.multiplier_option,
                         'value': multiplier, 'policy': self.policy})
            self._warned_negative = True
        return multiplier

    def multiplier_key(self):
        # ``weight_multiplier`` above still reads only the aggregates'
        # metadata and the option, so its results may be cached.
        return super().multiplier_key()

    def weigh_object(self, host_state, weight_properties):
        return self.sign * group_members_on_host(
            host_state, weight_properties, self.policy)

    def weigh_rows(self, table, rows, weight_properties):
        group = weight_properties.get('instance_group')
        if group is None or group.policy_name != self.policy:
            return np.zeros(len(rows))
        members = group.obj_get('members') or ()
        return self.sign * table.instance_counts(members)[rows]


class ServerGroupSoftAffinityWeigher(_SoftAffinityWeigherBase):
    """Raw weight: the number of the request's ``soft-affinity`` group
    members on the host (instances, counted from
    ``host_state.instances``), else 0.

    Multiplier ``[filter_scheduler] soft_affinity_weight_multiplier``
    (default 1.0, min 0.0), overridable per aggregate with the key of the
    same name: the group is packed onto the hosts it already uses.
    """

    policy = 'soft-affinity'
    multiplier_option = 'soft_affinity_weight_multiplier'


class ServerGroupSoftAntiAffinityWeigher(_SoftAffinityWeigherBase):
    """Raw weight: minus the number of the request's
    ``soft-anti-affinity`` group members on the host, else 0.

    Multiplier ``[filter_scheduler] soft_anti_affinity_weight_multiplier``
    (default 1.0, min 0.0), overridable per aggregate with the key of the
    same name: the group is spread over the hosts it uses least.
    """

    policy = 'soft-anti-affinity'
    sign = -1
    multiplier_option = 'soft_anti_affinity_weight_multiplier'
