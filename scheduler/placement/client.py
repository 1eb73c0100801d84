"""The Placement API calls of the scheduler: claims and their release.

``PlacementClient`` is a keystoneauth1 Adapter built from the
``[placement]`` options, as Nova's report client builds its own, at
microversion 1.36 (Nova 34's for allocation candidates and claims):

* ``claim``: ``PUT /allocations/{consumer}`` with one allocation request
  (the candidate's ``allocations``), the project and user, and the
  ``consumer_generation`` (None for a new consumer), as
  ``nova.scheduler.utils.claim_resources``.  Placement checks capacity
  and the providers' generations itself: 204 is a claim, 409 a refusal
  (no room left, or ``placement.concurrent_update``);
  A 409 that is a provider generation conflict
  (``placement.concurrent_update`` without "consumer generation") is a
  race inside Placement, which the caller did not lose: it is retried,
  as Nova's report client retries it, up to ``CLAIM_RETRIES`` times.  A
  consumer generation conflict for a new claim means the instance holds
  allocations already (an evacuation keeps the source host's): the
  claim is made again on top of them with the consumer's generation, as
  Nova's report client doubles up an evacuation's allocations;
* ``claim_all``: the claims of several new consumers in one ``POST
  /allocations`` (microversion 1.13+), which Placement writes in one
  transaction: all of them or none; each consumer with its own
  project and user (the requests of a batch are several callers');
* ``allocations`` / ``replace_allocations``: a consumer's allocations
  and generation (``GET``), and their replacement, checked against that
  generation (``POST /allocations`` of one consumer: empty allocations
  delete them); ``delete_allocations``: ``DELETE
  /allocations/{consumer}``.

Allocation candidates are never asked: ``scheduler.placement.view``
computes them in memory.

Every request is bounded by ``[placement] timeout`` (seconds; 5 by
default, below ``[scheduler] decision_timeout``), and while it is in
flight an abandoned decision's caller is told Placement did not answer
(``scheduler.engine.deadline.outside``).  A write answered neither 204
nor 409 (no answer, a dropped connection, a 5xx a load balancer may
send after forwarding) may have been committed: it raises
``ClaimUncertain``, which says what was sent, for the caller to resolve
(``scheduler.placement.settling``).  Any other failure raises
``PlacementUnavailable``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging

from scheduler import exception
from scheduler.conf import CONF
from scheduler.conf import placement as placement_conf
from scheduler.engine import deadline
from scheduler.placement import claim_locks

LOG = logging.getLogger(__name__)

MICROVERSION = '1.36'
GROUP = 'placement'
# Retries of a claim that met a provider generation conflict (Nova's
# report client makes three more attempts).
CLAIM_RETRIES = 3
CONCURRENT_UPDATE = 'placement.concurrent_update'
# A consumer's allocations: {provider uuid: {'resources': {rc: amount}}}.
Allocations = dict[str, dict[str, Any]]
# Whose a consumer is: (project_id, user_id).
Owner = tuple[str, str]


class ClaimUncertain(exception.PlacementUnavailable):
    """A claim was sent and no answer says whether Placement wrote it.

    ``attempts``: ``{consumer: (held, sent)}``: the allocations the
    consumer held before (None: a new consumer) and those the claim
    sent."""

    def __init__(self, attempts: Mapping[str, tuple[Allocations | None,
                                                    Allocations]],
                 reason: str) -> None:
        super().__init__(reason=reason)
        self.attempts = dict(attempts)


def _adapter(conf: Any) -> Any:
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    session = ks_loading.load_session_from_conf_options(conf, GROUP,
                                                        auth=auth)
    return ks_loading.load_adapter_from_conf_options(
        conf, GROUP, session=session, auth=auth,
        default_microversion=MICROVERSION, raise_exc=False)


class PlacementClient:
    """Claims in Placement (see the module).  ``adapter``: a keystoneauth1
    Adapter, by default the one the ``[placement]`` options describe."""

    def __init__(self, adapter: Any = None, conf: Any = CONF) -> None:
        placement_conf.register_client_opts(conf)
        self.adapter = adapter if adapter is not None else _adapter(conf)
        self.timeout = conf.placement.timeout or placement_conf.DEFAULT_TIMEOUT

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        """One request, bounded (see the module)."""
        try:
            with deadline.outside('Placement',
                                  exception.PlacementUnavailable):
                return self.adapter.request(
                    path, method, timeout=self.timeout, **kwargs)
        except ks_exc.ClientException as exc:
            raise exception.PlacementUnavailable(
                reason='%s %s: %s' % (method, path, exc)) from exc

    def _write(self, method: str, path: str, body: dict[str, Any],
               attempts: Mapping[str, tuple[Allocations | None,
                                            Allocations]]) -> Any:
        """A claim's request; its answer when it is 204 or 409, else
        ClaimUncertain for ``attempts``.  Holds the claim locks of the
        providers it writes to (``claim_locks``) while in flight; the
        wait for them is a wait for Placement (``deadline.outside``)."""
        providers = {rp for held, sent in attempts.values()
                     for rp in (*(held or ()), *sent)}
        try:
            with deadline.outside('Placement',
                                  exception.PlacementUnavailable), \
                    claim_locks.held(providers):
                reply = self._request(method, path, json=body)
        except exception.PlacementUnavailable as exc:
            raise ClaimUncertain(attempts, reason=exc.kwargs['reason']) \
                from exc
        if reply.status_code not in (204, 409):
            raise ClaimUncertain(attempts, reason='%s %s answered %d: %s' % (
                method, path, reply.status_code, _detail(reply)))
        return reply

    def claim(self, consumer: str, allocation_request: dict[str, Any],
              project_id: str, user_id: str,
              consumer_generation: int | None = None) -> bool:
        """Allocate ``allocation_request['allocations']`` to ``consumer``
        (an instance uuid).  True when Placement took it (204), False when
        it refused (409: capacity, a provider or consumer generation
        conflict; the reason is logged at INFO).  Raises
        ClaimUncertain when the outcome is unknown (see the module),
        PlacementUnavailable when nothing was written."""
        body = {'allocations': allocation_request['allocations'],
                'project_id': project_id, 'user_id': user_id,
                'consumer_generation': consumer_generation}
        path = '/allocations/%s' % consumer
        reply = self._put_allocations(path, body, {
            consumer: (None, body['allocations'])})
        if (reply.status_code == 409 and consumer_generation is None and
                _consumer_race(reply)):
            reply = self._put_doubled(path, body)
        if reply.status_code == 204:
            return True
        LOG.info('Placement refused the claim of %s on %s: %s',
                 consumer, ', '.join(sorted(body['allocations'])),
                 _detail(reply))
        return False

    def claim_all(self, allocation_requests: Mapping[str, dict[str, Any]],
                  project_id: str, user_id: str,
                  owners: Mapping[str, Owner] | None = None
                  ) -> bool | None:
        """Allocate each new consumer (instance uuid) its allocation
        request in one ``POST /allocations``: all or none.  Each consumer
        is ``project_id``'s and ``user_id``'s, unless ``owners``
        (``{consumer: (project_id, user_id)}``) names its own.  True when
        Placement took them (204), False when it refused (409: capacity
        or a provider generation conflict, after ``CLAIM_RETRIES``
        retries), None when one consumer holds allocations already
        (claim them one by one).  Raises ClaimUncertain when the outcome
        is unknown."""
        owners = owners or {}
        body = {}
        for consumer, request in allocation_requests.items():
            project, user = owners.get(consumer, (project_id, user_id))
            body[consumer] = {'allocations': request['allocations'],
                              'project_id': project, 'user_id': user,
                              'consumer_generation': None}
        attempts = {consumer: (None, request['allocations'])
                    for consumer, request in allocation_requests.items()}
        for _attempt in range(CLAIM_RETRIES + 1):
            reply = self._write('POST', '/allocations', body, attempts)
            if reply.status_code != 409 or not _provider_race(reply):
                break
        if reply.status_code == 204:
            return True
        if _consumer_race(reply):
            return None
        LOG.info('Placement refused the claims of %d instances: %s',
                 len(body), _detail(reply))
        return False

    def _put_allocations(self, path: str, body: dict[str, Any],
                         attempts: Mapping[str, tuple[Allocations | None,
                                                      Allocations]]
                         ) -> Any:
        """PUT, retried on a provider generation conflict."""
        for _attempt in range(CLAIM_RETRIES + 1):
            reply = self._write('PUT', path, body, attempts)
            if reply.status_code != 409 or not _provider_race(reply):
                break
        return reply

    def _put_doubled(self, path: str, body: dict[str, Any]) -> Any:
        """The consumer has allocations already (an evacuated instance
        keeps its source host's): claim the destination's on top of them,
        with the consumer's generation, as Nova's report client does for
        an evacuation (providers the consumer already uses keep their
        allocation)."""
        consumer = path.rsplit('/', 1)[1]
        held, generation = self.allocations(consumer)
        doubled = dict(body, consumer_generation=generation, allocations={
            **{rp: allocation for rp, allocation
               in body['allocations'].items() if rp not in held},
            **held})
        return self._put_allocations(path, doubled, {
            consumer: (held, doubled['allocations'])})

    def allocations(self, consumer: str) -> tuple[Allocations, int | None]:
        """``consumer``'s allocations (``{}`` when none) and its
        generation (None when Placement knows no such consumer).  Raises
        PlacementUnavailable when they cannot be read."""
        path = '/allocations/%s' % consumer
        reply = self._request('GET', path)
        if reply.status_code != 200:
            raise exception.PlacementUnavailable(
                reason='GET %s answered %d: %s' % (
                    path, reply.status_code, _detail(reply)))
        current = reply.json()
        return ({rp: {'resources': allocation['resources']}
                 for rp, allocation in current['allocations'].items()},
                current.get('consumer_generation'))

    def replace_allocations(self, consumer: str, allocations: Allocations,
                            generation: int | None, project_id: str,
                            user_id: str) -> bool:
        """Make ``allocations`` (``{}``: none) the consumer's, provided
        its generation is still ``generation`` (``POST /allocations``).
        False when it is not (409); raises PlacementUnavailable for any
        other answer but 204."""
        reply = self._request('POST', '/allocations', json={consumer: {
            'allocations': allocations, 'project_id': project_id,
            'user_id': user_id, 'consumer_generation': generation}})
        if reply.status_code in (204, 409):
            return reply.status_code == 204
        raise exception.PlacementUnavailable(
            reason='POST /allocations of %s answered %d: %s' % (
                consumer, reply.status_code, _detail(reply)))

    def delete_allocations(self, consumer: str) -> bool:
        """Delete every allocation of ``consumer``; False when it had
        none (404).  Raises PlacementUnavailable for any other error."""
        path = '/allocations/%s' % consumer
        reply = self._request('DELETE', path)
        if reply.status_code in (204, 404):
            return reply.status_code == 204
        raise exception.PlacementUnavailable(
            reason='DELETE %s answered %d: %s' % (path, reply.status_code,
                                                  _detail(reply)))


def _error(reply: Any) -> dict[str, Any]:
    """The first error of a Placement error body ({} when none)."""
    try:
        errors = reply.json().get('errors') or []
    except (ValueError, AttributeError):
        return {}
    return errors[0] if errors and isinstance(errors[0], dict) else {}


def _consumer_race(reply: Any) -> bool:
    """Whether a 409 is a consumer generation conflict (the consumer
    has allocations, or changed)."""
    error = _error(reply)
    return (error.get('code') == CONCURRENT_UPDATE and
            'consumer generation' in (error.get('detail') or ''))


def _provider_race(reply: Any) -> bool:
    """Whether a 409 is a resource provider generation conflict (not a
    consumer generation conflict, not a lack of capacity)."""
    error = _error(reply)
    return (error.get('code') == CONCURRENT_UPDATE and
            'consumer generation' not in (error.get('detail') or ''))


def _detail(reply: Any) -> str:
    """The first error's detail of a Placement error body, else its
    text (at most 300 characters)."""
    detail = _error(reply).get('detail')
    return (detail or reply.text or '').strip()[:300]
