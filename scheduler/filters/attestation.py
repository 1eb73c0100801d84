"""Trust levels of compute nodes, from an OpenAttestation (OAT) server.

The TrustedFilter asks an ``AttestationClient`` for the trust level of a
node (its ``hypervisor_hostname``): ``trusted``, ``untrusted`` or
``unknown`` (the server may answer other strings; they are passed on and
simply match no usual request).  ``load_client()`` builds the client from
``[trusted_computing]`` (``scheduler.conf.trusted_computing``), or returns
None when ``attestation_server`` is unset: attestation is **off unless
configured**, and every node is then ``unknown``.

Protocol (Nova's ``AttestationService``, Newton/Ocata): one HTTPS POST to
``https://<attestation_server>:<attestation_port><attestation_api_url>
/PollHosts`` with the JSON body ``{"count": N, "hosts": [names]}``, the
headers ``Content-Type`` and ``Accept: application/json`` and, when
``attestation_auth_blob`` is set, ``x-auth-blob``.  A 200, 201, 202 or
204 answer carries ``{"hosts": [{"host_name", "trust_lvl", "vtime"}]}``.
``vtime`` (when the server attested the node) is read as ISO 8601, else
in the C locale's ``%c`` form (Mt. Wilson servers); a node whose vtime is
neither is ``unknown``.  The server's certificate is checked against
``attestation_server_ca_file`` (else the system CAs) unless
``attestation_insecure_ssl`` is set.  (Nova's ``verify`` expression got
the precedence wrong and always verified; here the option does what its
name says.)

Caching, after Nova's ``ComputeAttestationCache``: results are kept per
node and the server is asked again only for nodes whose result is stale;
all the nodes needed at one time are asked in one POST (the filter asks
for every candidate host of a request at once).  Differences from Nova,
all deliberate:

* a result is fresh for ``attestation_auth_timeout`` seconds after it was
  **received** (Nova compares the server's ``vtime`` with the timeout, so
  a server returning an old vtime made Nova poll on every host check);
* a failed poll (server unreachable, HTTP error, unreadable answer), and a
  node missing from the answer, give ``unknown`` for ``min(timeout, 10)``
  seconds, so that a dead server costs one timeout per 10 seconds rather
  than one per host (Nova re-polled each time);
* Nova filled its cache with every compute node at start-up; here nodes
  are learnt from the filter's calls;
* one request to the server times out after ``attestation_auth_timeout``
  seconds (at least 1; Nova had no timeout).
"""

import datetime
import json
import ssl
import threading
import time
import urllib.error
import urllib.request

from oslo_log import log as logging
from oslo_utils import timeutils

from scheduler.conf import CONF
from scheduler.conf import trusted_computing

LOG = logging.getLogger(__name__)

TRUSTED = 'trusted'
UNTRUSTED = 'untrusted'
UNKNOWN = 'unknown'

# Seconds a failed or missing answer is kept (at most the cache timeout).
FAILURE_RETRY_SECONDS = 10
_SUCCESS_STATUSES = (200, 201, 202, 204)


class AttestationClient:
    """What the TrustedFilter needs from an attestation service."""

    def get_trust_level(self, nodename):
        """The trust level of ``nodename``: ``trusted``, ``untrusted`` or
        ``unknown``.  Never raises for a server or network problem."""
        raise NotImplementedError()

    def get_trust_levels(self, nodenames):
        """``{nodename: level}`` for several nodes (one server round trip
        where the implementation can)."""
        return {name: self.get_trust_level(name) for name in nodenames}


def parse_vtime(text):
    """The attestation time of a PollHosts answer as a naive UTC datetime
    (ISO 8601, else the ``%c`` form), or None when it is neither."""
    if not isinstance(text, str):
        return None
    try:
        return timeutils.normalize_time(timeutils.parse_isotime(text))
    except ValueError:
        pass
    try:
        return datetime.datetime.strptime(text, '%c')
    except ValueError:
        return None


def parse_poll_response(body):
    """``{host_name: (trust_lvl, vtime)}`` from a PollHosts answer body
    (bytes or str); None when it is not the expected JSON.

    An entry without ``host_name`` is skipped; one without ``trust_lvl``
    or with an unreadable ``vtime`` gives ``(UNKNOWN, vtime or None)``.
    """
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get('hosts'), list):
        return None
    results = {}
    for state in data['hosts']:
        if not isinstance(state, dict) or not isinstance(
                state.get('host_name'), str):
            continue
        vtime = parse_vtime(state.get('vtime'))
        level = state.get('trust_lvl')
        if vtime is None or not isinstance(level, str):
            level = UNKNOWN
        results[state['host_name']] = (level, vtime)
    return results


class OpenAttestationClient(AttestationClient):
    """A PollHosts client with a per-node cache (module docstring).

    ``scheme`` is ``https`` in service; tests use ``http`` against a local
    server.  ``clock`` returns seconds (monotonic) and is there for tests.
    Thread-safe: one poll at a time.
    """

    def __init__(self, server, port=8443,
                 api_url='/OpenAttestationWebServices/V1.0', auth_blob=None,
                 ca_file=None, insecure_ssl=False, auth_timeout=60,
                 scheme='https', clock=time.monotonic):
        self.server = server
        self.port = port
        self.api_url = api_url or ''
        self.auth_blob = auth_blob
        self.ca_file = ca_file
        self.insecure_ssl = insecure_ssl
        self.auth_timeout = max(0, auth_timeout)
        self.request_timeout = max(1, self.auth_timeout)
        self.scheme = scheme
        self._clock = clock
        self._lock = threading.Lock()
        # nodename -> (level, vtime, expires at (clock seconds))
        self._cache = {}

    @property
    def url(self):
        host = self.server
        if ':' in host and not host.startswith('['):
            host = '[%s]' % host
        return '%s://%s:%s%s/PollHosts' % (self.scheme, host, self.port,
                                          self.api_url.rstrip('/'))

    def build_request(self, nodenames):
        """The ``urllib.request.Request`` polling ``nodenames``."""
        body = json.dumps({'count': len(nodenames),
                           'hosts': list(nodenames)}).encode('utf-8')
        headers = {'Content-Type': 'application/json',
                   'Accept': 'application/json'}
        if self.auth_blob:
            headers['x-auth-blob'] = self.auth_blob
        return urllib.request.Request(self.url, data=body, headers=headers,
                                      method='POST')

    def _ssl_context(self):
        if self.scheme != 'https':
            return None
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.insecure_ssl:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    def poll(self, nodenames):
        """Ask the server about ``nodenames``: ``{host_name: (level,
        vtime)}``, or None when the poll failed (logged)."""
        request = self.build_request(nodenames)
        try:
            with urllib.request.urlopen(request,
                                        timeout=self.request_timeout,
                                        context=self._ssl_context()) as resp:
                status = resp.status
                body = resp.read()
        except urllib.error.HTTPError as exc:
            LOG.warning('Attestation server %(url)s answered HTTP %(code)s',
                        {'url': self.url, 'code': exc.code})
            return None
        except (OSError, ValueError) as exc:
            LOG.warning('Cannot reach the attestation server %(url)s: '
                        '%(error)s', {'url': self.url, 'error': exc})
            return None
        if status not in _SUCCESS_STATUSES:
            LOG.warning('Attestation server %(url)s answered HTTP %(code)s',
                        {'url': self.url, 'code': status})
            return None
        results = parse_poll_response(body)
        if results is None:
            LOG.warning('Unreadable answer from the attestation server '
                        '%(url)s', {'url': self.url})
        return results

    def _fresh(self, nodename, now):
        entry = self._cache.get(nodename)
        return entry is not None and now < entry[2]

    def get_trust_levels(self, nodenames):
        nodenames = list(dict.fromkeys(nodenames))
        with self._lock:
            stale = [name for name in nodenames
                     if not self._fresh(name, self._clock())]
            if stale:
                results = self.poll(stale) or {}
                now = self._clock()
                retry = min(self.auth_timeout, FAILURE_RETRY_SECONDS)
                for name in stale:
                    if name in results:
                        level, vtime = results[name]
                        self._cache[name] = (level, vtime,
                                             now + self.auth_timeout)
                    else:
                        self._cache[name] = (UNKNOWN, None, now + retry)
            return {name: self._cache[name][0] for name in nodenames}

    def get_trust_level(self, nodename):
        return self.get_trust_levels([nodename])[nodename]

    def invalidate(self):
        """Forget every cached result."""
        with self._lock:
            self._cache.clear()


def load_client(conf=CONF):
    """An OpenAttestationClient configured from ``[trusted_computing]``,
    or None when ``attestation_server`` is unset (attestation off)."""
    # Idempotent: the options may not be registered by scheduler.conf yet.
    trusted_computing.register_opts(conf)
    group = conf.trusted_computing
    if not group.attestation_server:
        return None
    return OpenAttestationClient(
        server=group.attestation_server, port=group.attestation_port,
        api_url=group.attestation_api_url,
        auth_blob=group.attestation_auth_blob,
        ca_file=group.attestation_server_ca_file,
        insecure_ssl=group.attestation_insecure_ssl,
        auth_timeout=group.attestation_auth_timeout)
