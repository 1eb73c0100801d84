"""The soak's claims audit: the claims against its live instances, the
drain of the casts still queued, and the removal of its instance rows."""

from __future__ import annotations

import time

import sqlalchemy as sa

from scheduler.db import api as db
from scheduler.db import claims
from scheduler_tools.bench import soak_world

DRAIN_POLL_S = 1.0


def audit_claims(ctx, world):
    """The claims against the live instances: ``lost`` (live instances
    without a claim), ``leaked`` (claims of no live instance, abandoned
    ones aside), ``abandoned`` (claims of instances the soak gave up on),
    ``misplaced`` (a claim on another host than its instance's), and
    ``instances_match`` (the live ``instances`` rows the soak wrote are
    exactly the live instances).  Lists of uuids, sorted."""
    rows = {row['instance_uuid']: row for row in claims.get_claims(ctx)}
    live = world.live()
    extra = set(rows) - set(live)
    abandoned = extra & world.abandoned
    instances = db.INSTANCES.c
    with db.context_manager.reader.using(ctx) as session:
        recorded = set(session.execute(sa.select(instances.uuid).where(
            instances.deleted == 0, instances.user_id == soak_world.SOAK_USER))
            .scalars())
    return {'live': len(live), 'claims': len(rows),
            'lost': sorted(set(live) - set(rows)),
            'leaked': sorted(extra - abandoned),
            'abandoned': sorted(abandoned),
            'misplaced': sorted(u for u, instance in live.items()
                                if u in rows and
                                rows[u]['host'] != instance.host),
            'instances_match': recorded == set(live)}


def drain(ctx, world, services, timeout_s):
    """Wait up to ``timeout_s`` until the services handled the casts
    still queued: the claims are exactly the live instances' (abandoned
    ones aside).  Returns the last ``audit_claims`` and the seconds
    waited."""
    started = time.monotonic()
    while True:
        audit = audit_claims(ctx, world)
        settled = not (audit['lost'] or audit['leaked'] or
                       audit['misplaced'])
        waited = time.monotonic() - started
        if settled or waited >= timeout_s or not all(
                service.alive for service in services):
            return audit, round(waited, 2)
        time.sleep(DRAIN_POLL_S)


def remove_soak_rows(ctx):
    """Delete the instance rows the soak wrote."""
    with db.context_manager.writer.using(ctx) as session:
        session.execute(sa.delete(db.INSTANCES).where(
            db.INSTANCES.c.user_id == soak_world.SOAK_USER))
