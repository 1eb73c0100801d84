"""Affinity filters: place instances relative to other instances.

Follows Nova's ``affinity_filter`` module:

* DifferentHostFilter / SameHostFilter: scheduler hints naming instances
  (``different_host``, ``same_host``);
* SimpleCIDRAffinityFilter: hints ``build_near_host_ip`` + ``cidr``;
* ServerGroupAffinityFilter / ServerGroupAntiAffinityFilter: the request's
  server group.  Their bases, ``_GroupAffinityFilter`` and
  ``_GroupAntiAffinityFilter``, start with ``_`` so they are never loaded
  as filters of their own.
"""

import ipaddress

import numpy as np
from oslo_log import log as logging

from scheduler import filters
from scheduler.filters import utils

LOG = logging.getLogger(__name__)

MAX_SERVER_PER_HOST = 'max_server_per_host'


def _hint_uuids(spec_obj, hint_name):
    """The instance uuids of a hint, always as a list (may be empty)."""
    value = spec_obj.get_scheduler_hint(hint_name)
    if not value:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


class DifferentHostFilter(filters.BaseHostFilter):
    """The host runs none of the instances in the ``different_host`` hint.

    The hint is an instance uuid or a list of them; no hint -> pass.  The
    host's instances are the keys of ``host_state.instances``.  Runs once
    per request (Nova).
    """

    HOST_LOCAL = True

    run_filter_once_per_request = True

    def host_passes(self, host_state, spec_obj):
        uuids = _hint_uuids(spec_obj, 'different_host')
        if not uuids:
            return True
        return not utils.instance_uuids_overlap(host_state, uuids)


class SameHostFilter(filters.BaseHostFilter):
    """The host runs at least one of the instances in the ``same_host``
    hint (an instance uuid or a list); no hint -> pass.  Runs once per
    request (Nova)."""

    HOST_LOCAL = True

    run_filter_once_per_request = True

    def host_passes(self, host_state, spec_obj):
        uuids = _hint_uuids(spec_obj, 'same_host')
        if not uuids:
            return True
        return utils.instance_uuids_overlap(host_state, uuids)


class SimpleCIDRAffinityFilter(filters.BaseHostFilter):
    """The host's ``host_ip`` is in the network ``build_near_host_ip`` +
    ``cidr``.

    ``cidr`` defaults to ``/24`` and is appended to the address as Nova
    does (``10.0.0.5`` + ``/24``; a ``cidr`` given without its ``/`` is
    accepted).  No ``build_near_host_ip`` hint -> pass.  A host without an
    IP, or a hint that is not an address or network, fails.  IPv4 and IPv6
    both work; an address never belongs to a network of the other family.
    Runs once per request (Nova).
    """

    HOST_LOCAL = True

    run_filter_once_per_request = True

    def host_passes(self, host_state, spec_obj):
        near_ip = spec_obj.get_scheduler_hint('build_near_host_ip')
        if not near_ip:
            return True
        cidr = spec_obj.get_scheduler_hint('cidr', '/24')
        try:
            network = _network(near_ip, cidr)
        except (TypeError, ValueError):
            LOG.warning('Invalid build_near_host_ip/cidr hints %s%s',
                        near_ip, cidr)
            return False
        try:
            return ipaddress.ip_address(host_state.host_ip) in network
        except ValueError:
            LOG.debug('%(host_state)s has no usable host_ip (%(ip)r)',
                      {'host_state': host_state, 'ip': host_state.host_ip})
            return False


def _network(address, cidr):
    """The network ``address`` + ``cidr`` (``/NN``), host bits allowed."""
    if not isinstance(address, str) or not isinstance(cidr, str):
        raise TypeError('the hints must be single strings')
    if not cidr.startswith('/'):
        cidr = '/' + cidr
    return ipaddress.ip_network(address.strip() + cidr.strip(), strict=False)


class _GroupAntiAffinityFilter(filters.BaseHostFilter):
    """Base of the anti-affinity filters for the policy ``policy_name``.

    * no server group, or another policy -> pass;
    * the instance being scheduled is already on the host -> pass (a move
      may re-check its source host, which Nova's filter lets through);
    * the group has the ``max_server_per_host`` rule (Rocky+): pass when
      the number of group members on the host (``group.members`` ∩ keys of
      ``host_state.instances``) is below it; a value that is not a
      positive integer counts as 1;
    * otherwise (Newton to Queens): pass when the host is not one of
      ``group.hosts`` (the hosts of the members, plus those chosen earlier
      in this request).
    """

    HOST_LOCAL = True

    policy_name: str | None = None

    def host_passes(self, host_state, spec_obj):
        group = spec_obj.get('instance_group')
        if group is None or group.policy_name != self.policy_name:
            return True
        instance_uuid = spec_obj.get('instance_uuid')
        if instance_uuid and instance_uuid in host_state.instances:
            return True
        if MAX_SERVER_PER_HOST in group.rules:
            return self._below_max_per_host(host_state, group)
        passes = host_state.host not in group.host_list()
        if not passes:
            LOG.debug('%(host_state)s already hosts a member of the group',
                      {'host_state': host_state})
        return passes

    def passes_all(self, spec_obj):
        group = spec_obj.get('instance_group')
        return group is None or group.policy_name != self.policy_name

    def host_mask(self, table, rows, spec_obj):
        group = spec_obj.get('instance_group')
        if group is None or group.policy_name != self.policy_name:
            return np.ones(len(rows), dtype=bool)
        if MAX_SERVER_PER_HOST in group.rules:
            members = group.obj_get('members') or []
            on_host = table.instance_counts(members)[rows]
            mask = on_host < _max_server_per_host(group)
        else:
            mask = ~_on_hosts(table, rows, group.host_list())
        instance_uuid = spec_obj.get('instance_uuid')
        if instance_uuid:
            mask |= table.instance_counts([instance_uuid])[rows] > 0
        return mask

    @staticmethod
    def _below_max_per_host(host_state, group):
        members = set(group.obj_get('members') or [])
        on_host = len(members & set(host_state.instances))
        maximum = _max_server_per_host(group)
        if on_host >= maximum:
            LOG.debug('%(host_state)s already hosts %(count)d members of the '
                      'group (max %(max)d)', {'host_state': host_state,
                                              'count': on_host,
                                              'max': maximum})
            return False
        return True


def _on_hosts(table, rows, hosts):
    """bool array: which of ``rows`` are nodes of the service hosts
    ``hosts`` (looked up one by one when the rows are fewer, as when a
    request's later instances filter only the hosts they consumed
    from)."""
    if len(rows) == 1:
        return np.array([table.states[int(rows[0])].host in hosts])
    if len(rows) < len(hosts):
        names = set(hosts)
        states = table.states
        return np.fromiter((states[row].host in names
                            for row in rows.tolist()),
                           dtype=bool, count=len(rows))
    return np.isin(rows, table.host_rows(hosts))


def _max_server_per_host(group):
    value = group.rules.get(MAX_SERVER_PER_HOST)
    try:
        maximum = int(value)
    except (TypeError, ValueError):
        maximum = 0
    if maximum < 1:
        LOG.warning('Invalid max_server_per_host rule %r; using 1', value)
        return 1
    return maximum


class ServerGroupAntiAffinityFilter(_GroupAntiAffinityFilter):
    """Hosts of an ``anti-affinity`` server group are not shared.

    See ``_GroupAntiAffinityFilter`` for the rule.  Runs for every
    instance of a request, so that later instances avoid the hosts the
    driver recorded for earlier ones.
    """

    policy_name = 'anti-affinity'


class _GroupAffinityFilter(filters.BaseHostFilter):
    """Base of the affinity filters for the policy ``policy_name``.

    No server group, or another policy -> pass.  Otherwise pass when the
    group has no host yet (its first member goes anywhere) or the host is
    one of ``group.hosts``.  There is no move exception here (Nova).
    """

    policy_name: str | None = None

    def host_passes(self, host_state, spec_obj):
        group = spec_obj.get('instance_group')
        if group is None or group.policy_name != self.policy_name:
            return True
        hosts = group.host_list()
        return not hosts or host_state.host in hosts

    def passes_all(self, spec_obj):
        group = spec_obj.get('instance_group')
        return (group is None or group.policy_name != self.policy_name or
                not group.host_list())

    def host_mask(self, table, rows, spec_obj):
        group = spec_obj.get('instance_group')
        hosts = (group.host_list() if group is not None and
                 group.policy_name == self.policy_name else None)
        if not hosts:
            return np.ones(len(rows), dtype=bool)
        return _on_hosts(table, rows, hosts)


class ServerGroupAffinityFilter(_GroupAffinityFilter):
    """Members of an ``affinity`` server group share one host.

    See ``_GroupAffinityFilter`` for the rule.  Runs for every instance
    of a request.
    """

    policy_name = 'affinity'
