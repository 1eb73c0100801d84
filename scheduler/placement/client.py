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
* ``delete_allocations``: ``DELETE /allocations/{consumer}``.

Allocation candidates are never asked: ``scheduler.placement.view``
computes them in memory.

Any other answer, or no answer, raises ``PlacementUnavailable``.
"""

from __future__ import annotations

from typing import Any

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging

from scheduler import exception
from scheduler.conf import CONF

LOG = logging.getLogger(__name__)

MICROVERSION = '1.36'
GROUP = 'placement'
# Retries of a claim that met a provider generation conflict (Nova's
# report client makes three more attempts).
CLAIM_RETRIES = 3
CONCURRENT_UPDATE = 'placement.concurrent_update'


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
        self.adapter = adapter if adapter is not None else _adapter(conf)

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            return self.adapter.request(path, method, **kwargs)
        except ks_exc.ClientException as exc:
            raise exception.PlacementUnavailable(
                reason='%s %s: %s' % (method, path, exc)) from exc

    def claim(self, consumer: str, allocation_request: dict[str, Any],
              project_id: str, user_id: str,
              consumer_generation: int | None = None) -> bool:
        """Allocate ``allocation_request['allocations']`` to ``consumer``
        (an instance uuid).  True when Placement took it (204), False when
        it refused (409: capacity, a provider or consumer generation
        conflict; the reason is logged at INFO).  Raises
        PlacementUnavailable for any other answer."""
        body = {'allocations': allocation_request['allocations'],
                'project_id': project_id, 'user_id': user_id,
                'consumer_generation': consumer_generation}
        path = '/allocations/%s' % consumer
        reply = self._put_allocations(path, body)
        if (reply.status_code == 409 and consumer_generation is None and
                _consumer_race(reply)):
            reply = self._put_doubled(path, body)
        if reply.status_code == 204:
            return True
        if reply.status_code == 409:
            LOG.info('Placement refused the claim of %s on %s: %s',
                     consumer, ', '.join(sorted(body['allocations'])),
                     _detail(reply))
            return False
        raise exception.PlacementUnavailable(
            reason='PUT %s answered %d: %s' % (path, reply.status_code,
                                               _detail(reply)))

    def _put_allocations(self, path: str, body: dict[str, Any]) -> Any:
        """PUT, retried on a provider generation conflict."""
        for _attempt in range(CLAIM_RETRIES + 1):
            reply = self._request('PUT', path, json=body)
            if reply.status_code != 409 or not _provider_race(reply):
                break
        return reply

    def _put_doubled(self, path: str, body: dict[str, Any]) -> Any:
        """The consumer has allocations already (an evacuated instance
        keeps its source host's): claim the destination's on top of them,
        with the consumer's generation, as Nova's report client does for
        an evacuation (providers the consumer already uses keep their
        allocation)."""
        reply = self._request('GET', path)
        if reply.status_code != 200:
            raise exception.PlacementUnavailable(
                reason='GET %s answered %d: %s' % (
                    path, reply.status_code, _detail(reply)))
        current = reply.json()
        held = {rp: {'resources': allocation['resources']}
                for rp, allocation in current['allocations'].items()}
        doubled = dict(body, consumer_generation=current.get(
            'consumer_generation'), allocations={
                **{rp: allocation for rp, allocation
                   in body['allocations'].items() if rp not in held},
                **held})
        return self._put_allocations(path, doubled)

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
