"""The load mode's fleet in the database: its hosts (``load_hosts``),
the claims released between phases (``release_claims``) and removed
afterwards (``remove_load``), and what the database holds after a phase
(``verify``, ``fleet_totals``)."""

import dataclasses

import sqlalchemy as sa

from scheduler.db import api as db
from scheduler.db import claim_sql
from scheduler.db import claims
from scheduler.view import host_state
from scheduler_tools import seed
from scheduler_tools.bench import workload

# RAM of the generated hosts is divided by this (16 to 128 GiB).
RAM_DIVISOR = 4
# Claims released per transaction between phases.
RELEASE_CHUNK = 5000


def load_hosts(count, seed=0, ram_divisor=RAM_DIVISOR):
    """``workload.generate_hosts(count, seed)`` with the RAM (total and
    used, MiB) divided by ``ram_divisor``: a fleet that a few hundred
    requests fill."""
    hosts = []
    for host in workload.generate_hosts(count, seed):
        spec = dataclasses.replace(
            host.spec, memory_mb=host.spec.memory_mb // ram_divisor)
        hosts.append(dataclasses.replace(
            host, spec=spec,
            memory_mb_used=host.memory_mb_used // ram_divisor))
    return hosts


def remove_load(ctx, seeded):
    """Delete the claims on the seeded compute nodes, then the seeded
    rows (``seed.remove_seeded``)."""
    table = claim_sql.CLAIMS
    ids = seeded.compute_node_ids
    with db.context_manager.writer.using(ctx) as session:
        for start in range(0, len(ids), seed.INSERT_CHUNK):
            session.execute(sa.delete(table).where(
                table.c.compute_node_id.in_(
                    ids[start:start + seed.INSERT_CHUNK])))
    seed.remove_seeded(ctx, seeded)


def release_claims(ctx, chunk=RELEASE_CHUNK):
    """Release every live claim (``claims.release_many``, ``chunk`` at a
    time): the claimed amounts go back to their nodes, whose rows the
    services' views then read as changed.  Returns the claims
    released."""
    uuids = [row['instance_uuid'] for row in claims.get_claims(ctx)]
    released = 0
    for start in range(0, len(uuids), chunk):
        released += claims.release_many(ctx, uuids[start:start + chunk])
    return released


def fleet_totals(ctx):
    """Sums over the live compute nodes, per resource of
    ``claim_sql.RESOURCES`` (``vcpus``, ``memory_mb`` in MiB, ``disk_gb`` in
    GiB): ``{'fleet_<name>_used': reported usage, 'fleet_<name>_claimed':
    claims, 'fleet_<name>_capacity': total times the allocation ratio
    claims use (float)}``."""
    node = db.COMPUTE_NODES.c
    columns = [node.id]
    for resource in claim_sql.RESOURCES:
        columns += [node[resource.total], node[resource.used],
                    node[resource.claimed], node[resource.ratio]]
    with db.context_manager.reader.using(ctx) as session:
        rows = session.execute(sa.select(*columns).where(
            node.deleted == 0)).mappings().all()
    totals = {}
    for resource in claim_sql.RESOURCES:
        prefix = 'fleet_%s_' % resource.name
        totals[prefix + 'used'] = sum(row[resource.used] or 0
                                      for row in rows)
        totals[prefix + 'claimed'] = sum(row[resource.claimed] or 0
                                         for row in rows)
        totals[prefix + 'capacity'] = round(sum(
            (row[resource.total] or 0) * host_state.resolve_allocation_ratio(
                resource.ratio, row[resource.ratio]) for row in rows), 1)
    return totals


def verify(ctx, placed):
    """What the database says after the load: ``claims`` (live claim
    rows), ``overcommitted`` (``claims.overcommitted_nodes``),
    ``unbalanced`` (``claims.unbalanced_nodes``), ``claims_match``
    (claims == ``placed`` instances) and ``fleet_totals``."""
    found = {'claims': claims.claims_count(ctx),
             'overcommitted': claims.overcommitted_nodes(ctx),
             'unbalanced': claims.unbalanced_nodes(ctx)}
    found['claims_match'] = found['claims'] == placed
    found.update(fleet_totals(ctx))
    return found
