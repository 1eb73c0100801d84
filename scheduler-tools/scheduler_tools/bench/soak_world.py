"""The soak's compute side: its registry of the live instances, and
their boots and deletes as a compute service records them."""

from __future__ import annotations

import collections
import dataclasses
import random
import threading
import time

from scheduler import context as scheduler_context
from scheduler.db import api as db
from scheduler.objects import instance as instance_obj
from scheduler_tools import writers

# The instances' owner (``instances.user_id``): what the soak wrote.
SOAK_USER = 'soak'
ACTIVE = 'active'
RUNNING = 1     # Nova's power_state.RUNNING


@dataclasses.dataclass(slots=True)
class Instance:
    """A live instance the soak booted."""

    uuid: str
    host: str
    node: str
    flavor_id: int | None
    project_id: str | None

    def cast_object(self):
        """The Instance an instance cast carries."""
        return instance_obj.Instance.from_db({
            'uuid': self.uuid, 'host': self.host, 'node': self.node,
            'instance_type_id': self.flavor_id,
            'project_id': self.project_id})


_local = threading.local()


def thread_context():
    """An admin context of this thread's own (the enginefacade keeps a
    transaction's state on its context)."""
    ctx = getattr(_local, 'ctx', None)
    if ctx is None:
        ctx = _local.ctx = scheduler_context.get_admin_context()
    return ctx


class World:
    """The compute side: the live instances, their boots and deletes.

    ``api`` is a SchedulerAPI (or anything with its casts); with
    ``write`` False nothing is written to the database (unit tests).
    Thread-safe.  ``counts`` has ``boots``, ``deletes`` and each cast by
    name; ``abandoned`` the uuids of instances the soak gave up on (a
    call or a write failed), whose claims are not leaks.
    """

    def __init__(self, api, live_target, delete_share, seed=0, write=True):
        self.api = api
        self.live_target = live_target
        self.delete_share = delete_share
        self.write = write
        self._lock = threading.Lock()
        self._live = []
        self._index = {}
        self._by_host = collections.defaultdict(dict)
        self._rng = random.Random('soak:%s' % seed)
        self.counts = collections.Counter()
        self.abandoned = set()
        # ``time.monotonic()`` when the live instances first reached
        # ``live_target``.
        self.filled_at = None

    def __len__(self):
        return len(self._live)

    def count(self, name, amount=1):
        with self._lock:
            self.counts[name] += amount

    def abandon(self, uuids):
        """The soak gave up on these instances (their claims are not
        leaks)."""
        with self._lock:
            self.abandoned.update(uuids)

    def counters(self):
        with self._lock:
            return dict(self.counts)

    # -- the registry ---------------------------------------------------

    def add(self, instance):
        with self._lock:
            self._index[instance.uuid] = len(self._live)
            self._live.append(instance)
            self._by_host[instance.host][instance.uuid] = instance
            if (self.filled_at is None and
                    len(self._live) >= self.live_target):
                self.filled_at = time.monotonic()

    def _remove_at(self, position):
        instance = self._live[position]
        last = self._live.pop()
        if last is not instance:
            self._live[position] = last
            self._index[last.uuid] = position
        del self._index[instance.uuid]
        on_host = self._by_host[instance.host]
        del on_host[instance.uuid]
        if not on_host:
            del self._by_host[instance.host]
        return instance

    def pick_delete(self):
        """The live instance to delete before the next boot, taken out of
        the registry, or None: one always once there are ``live_target``
        live instances, else with probability ``delete_share``."""
        with self._lock:
            if not self._live:
                return None
            if (len(self._live) < self.live_target and
                    self._rng.random() >= self.delete_share):
                return None
            return self._remove_at(self._rng.randrange(len(self._live)))

    def remove(self, instance_uuid):
        """Take the live instance ``instance_uuid`` out of the registry
        (to delete it); returns it."""
        with self._lock:
            return self._remove_at(self._index[instance_uuid])

    def live(self):
        """``{uuid: Instance}`` of the live instances."""
        with self._lock:
            return {instance.uuid: instance for instance in self._live}

    def host_instances(self, rng=None):
        """``(host, [Instance])`` of a random host with live instances,
        or ``(None, [])``."""
        with self._lock:
            if not self._live:
                return None, []
            pick = (rng or self._rng).choice(self._live)
            return pick.host, list(self._by_host[pick.host].values())

    # -- what a compute service does ------------------------------------

    def boot(self, request, selections):
        """Record the instances of ``request`` placed by ``selections``
        (lists of Selection, chosen host first): their ``instances``
        rows in one transaction, then one ``update_instance_info`` cast
        per host.  Returns the number recorded."""
        spec = request.spec
        flavor = spec.flavor
        placed = [Instance(instance_uuid, picks[0].service_host,
                           picks[0].nodename, flavor.obj_get('id'),
                           spec.obj_get('project_id'))
                  for instance_uuid, picks in zip(
                      request.instance_uuids, selections, strict=True)]
        if self.write:
            ctx = thread_context()
            now = db._utcnow()
            try:
                with db.context_manager.writer.using(ctx):
                    for instance in placed:
                        writers.instance_create(ctx, {
                            'uuid': instance.uuid, 'host': instance.host,
                            'node': instance.node,
                            'launched_on': instance.host,
                            'instance_type_id': instance.flavor_id,
                            'project_id': instance.project_id,
                            'user_id': SOAK_USER,
                            'vcpus': flavor.vcpus,
                            'memory_mb': flavor.memory_mb,
                            'root_gb': flavor.root_gb,
                            'ephemeral_gb': flavor.ephemeral_gb,
                            'vm_state': ACTIVE, 'power_state': RUNNING,
                            'created_at': now})
            except Exception:
                self.abandon(request.instance_uuids)
                raise
        by_host = collections.defaultdict(list)
        for instance in placed:
            self.add(instance)
            by_host[instance.host].append(instance)
        self.count('boots', len(placed))
        for host, instances in by_host.items():
            self.api.update_instance_info(
                thread_context(), host, instance_obj.InstanceList(
                    objects=[i.cast_object() for i in instances]))
            self.count('update_instance_info')
        return len(placed)

    def delete(self, instance):
        """Delete ``instance`` (already out of the registry): soft-delete
        its row, then cast ``delete_instance_info``."""
        ctx = thread_context()
        if self.write:
            try:
                writers.instance_destroy(ctx, instance.uuid)
            except Exception:
                self.abandon([instance.uuid])
                raise
        self.count('deletes')
        self.api.delete_instance_info(ctx, instance.host, instance.uuid)
        self.count('delete_instance_info')
