"""The soak's casts: the instance casts and the churn of its own
aggregates, every second (``CastLoop``)."""

from __future__ import annotations

import collections
import contextlib
import random
import uuid

from oslo_log import log as logging

from scheduler import exception
from scheduler.db import host_aggregates
from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import instance as instance_obj
from scheduler_tools.bench import soak_world

LOG = logging.getLogger(__name__)

# The casts' thread ticks every CAST_PERIOD_S; an aggregate changes every
# AGGREGATE_EVERY ticks, and at most MAX_AGGREGATES of its own live.
CAST_PERIOD_S = 1.0
AGGREGATE_EVERY = 5
MAX_AGGREGATES = 3
AGGREGATE_PREFIX = 'soak-'


class CastLoop:
    """The instance and aggregate casts (see the module), every
    ``period_s`` until ``stop`` is set."""

    def __init__(self, api, world, host_names, seed=0,
                 period_s=CAST_PERIOD_S):
        self.api = api
        self.world = world
        self.host_names = list(host_names)
        self.period_s = period_s
        self.rng = random.Random('soak-casts:%s' % seed)
        self.aggregates = collections.deque()   # (id, Aggregate)
        self.errors = 0
        self._made = 0
        self._grow_next = False

    def run(self, stop):
        tick = 0
        while not stop.wait(self.period_s):
            tick += 1
            try:
                self.tick(tick)
            except Exception as exc:
                self.errors += 1
                LOG.warning('soak cast failed: %s', exc)

    def tick(self, tick):
        ctx = soak_world.thread_context()
        host, instances = self.world.host_instances(self.rng)
        if host is not None:
            self.api.sync_instance_info(ctx, host,
                                        [i.uuid for i in instances])
            self.world.count('sync_instance_info')
        host, instances = self.world.host_instances(self.rng)
        if host is not None:
            self.api.update_instance_info(
                ctx, host, instance_obj.InstanceList(
                    objects=[i.cast_object() for i in instances]))
            self.world.count('update_instance_info')
        if tick % AGGREGATE_EVERY == 0:
            self.aggregate_step(ctx)

    def aggregate_step(self, ctx):
        """Create, grow or delete one aggregate of the soak's, in the
        database, then cast it.

        The steps follow a fixed cycle, so that every kind of cast comes
        within ``2 * MAX_AGGREGATES`` steps whatever the random draws: the
        oldest aggregate is deleted once ``MAX_AGGREGATES`` live, and
        otherwise creating one and adding a host to one alternate (a host
        already in the drawn aggregate makes that step a create).
        """
        if len(self.aggregates) >= MAX_AGGREGATES:
            aggregate_id, obj = self.aggregates.popleft()
            host_aggregates.aggregate_delete(ctx, aggregate_id)
            self.api.delete_aggregate(ctx, obj)
            self.world.count('delete_aggregate')
            return
        grow, self._grow_next = self._grow_next, not self._grow_next
        position = None
        if grow and self.aggregates:
            position = self.rng.randrange(len(self.aggregates))
            aggregate_id, obj = self.aggregates[position]
            new = self.rng.choice(self.host_names)
            if new in (obj.hosts or []):
                position = None
        if position is not None:
            row = host_aggregates.aggregate_add_host(ctx, aggregate_id, new)
        else:
            self._made += 1
            row = host_aggregates.aggregate_create(
                ctx, '%s%s-%d' % (AGGREGATE_PREFIX, uuid.uuid4().hex[:8],
                                  self._made),
                metadata={'soak': str(self._made)})
            for host in self.rng.sample(self.host_names,
                                        min(len(self.host_names),
                                            self.rng.randint(1, 4))):
                row = host_aggregates.aggregate_add_host(ctx, row['id'],
                                                         host)
        obj = aggregate_obj.Aggregate.from_db(row)
        if position is None:
            self.aggregates.append((row['id'], obj))
        else:
            self.aggregates[position] = (row['id'], obj)
        self.api.update_aggregates(ctx, [obj])
        self.world.count('update_aggregates')

    def remove_all(self, ctx):
        """Delete the soak's aggregates still in the database."""
        while self.aggregates:
            aggregate_id, _ = self.aggregates.popleft()
            with contextlib.suppress(exception.NotFound):
                host_aggregates.aggregate_delete(ctx, aggregate_id)
