"""TrustedFilter: keep hosts whose attested trust level is the one asked.

Follows Nova's TrustedFilter (Folsom to Pike, experimental in Nova):

* the flavor extra spec ``trust:trusted_host`` (``trusted``,
  ``untrusted`` or ``unknown``) is unset or empty -> every host passes;
* otherwise a host passes when the trust level of its node
  (``host_state.nodename``), as the attestation server reports it, equals
  the extra spec exactly.

The levels come from ``scheduler.filters.attestation`` (``[trusted_computing]``
options; results cached per node for ``attestation_auth_timeout``
seconds).  Before checking the hosts one by one, the filter asks for the
levels of every candidate node in one round trip.  Attestation is off
unless ``[trusted_computing] attestation_server`` is set: every node is
then ``unknown``, so ``trusted`` and ``untrusted`` requests find no host
(a warning says so, once per filter instance) and ``unknown`` requests
pass everywhere.

``run_filter_once_per_request`` is True (a host's trust does not change
within a request).  No limits are written.
"""

from oslo_log import log as logging

from scheduler import filters
from scheduler.filters import attestation
from scheduler.view import rebuild

LOG = logging.getLogger(__name__)

TRUST_EXTRA_SPEC = 'trust:trusted_host'
_NOT_LOADED = object()


def _requested_trust(spec_obj):
    """The requested level, or None (unset or empty: no check, Nova)."""
    extra_specs = spec_obj.flavor.obj_get('extra_specs') or {}
    return extra_specs.get(TRUST_EXTRA_SPEC) or None


class TrustedFilter(filters.BaseHostFilter):
    """Pass hosts whose attested trust level equals ``trust:trusted_host``.

    ``client``: an ``attestation.AttestationClient``; by default it is
    built by ``attestation.load_client()`` on first use (None when
    attestation is off).
    """

    HOST_LOCAL = True

    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def __init__(self, client=_NOT_LOADED):
        self._client = client
        self._warned_off = False

    @property
    def client(self):
        if self._client is _NOT_LOADED:
            self._client = attestation.load_client()
        return self._client

    def _levels(self, nodenames):
        client = self.client
        if client is None:
            if not self._warned_off:
                self._warned_off = True
                LOG.warning('A request asks for %(key)s but attestation is '
                            'off ([trusted_computing] attestation_server is '
                            'unset): every host is of trust level '
                            '%(unknown)r',
                            {'key': TRUST_EXTRA_SPEC,
                             'unknown': attestation.UNKNOWN})
            return {name: attestation.UNKNOWN for name in nodenames}
        return client.get_trust_levels(nodenames)

    def filter_all(self, host_states, spec_obj):
        host_states = list(host_states)
        if (_requested_trust(spec_obj) is None or
                rebuild.is_rebuild(spec_obj, host_states)):
            return super().filter_all(host_states, spec_obj)
        # One round trip for every candidate; host_passes reads the cache.
        self._levels([host.nodename for host in host_states])
        return super().filter_all(host_states, spec_obj)

    def host_passes(self, host_state, spec_obj):
        trust = _requested_trust(spec_obj)
        if trust is None:
            return True
        level = self._levels([host_state.nodename])[host_state.nodename]
        if level != trust:
            LOG.debug('%(host_state)s is of trust level %(level)r, not '
                      '%(trust)r', {'host_state': host_state,
                                    'level': level, 'trust': trust})
            return False
        return True
