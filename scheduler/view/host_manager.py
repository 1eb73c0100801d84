"""HostManager: the scheduler's in-memory view of the compute nodes.

A facade over ``scheduler.view``: the aggregates and instances the casts
keep (``tracking``), the HostStates and their ``HostTable`` refreshed
from the database (``refresh``), and the virtual consumption of the
HostStates chosen.  Filtering and weighing over the view is
``scheduler.engine.pipeline``'s.  How the view is built and refreshed is
described in docs/refresh.rst.

Every public method is thread-safe (one re-entrant lock, ``lock``): the
RPC server runs requests and casts on a pool of threads.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterable
from typing import Any

from oslo_utils import timeutils

from scheduler.conf import CONF
from scheduler.db import source as db_source
from scheduler.objects import instance as instance_obj
from scheduler.view import refresh
from scheduler.view import tracking
from scheduler.view.host_state import HostState
from scheduler.view.host_table import HostTable

COMPUTE_BINARY = refresh.COMPUTE_BINARY
CLOCK_MARGIN = refresh.CLOCK_MARGIN
# The HostState attribute of the image properties reader (Nova database
# mode), read by the ImagePropertiesWeigher.
IMAGE_PROPS_ATTRIBUTE = 'image_props_reader'


class HostManager:
    """Owns the HostStates, their HostTable, the aggregates and the
    per-host instances (see the module)."""

    def __init__(self, context: Any) -> None:
        """Load the aggregates and (when tracking) the instance info.

        ``context`` is used for the start-up database reads.
        """
        self.lock = threading.RLock()
        # Where every read goes (scheduler.db.source).
        self.source = db_source.get_source()
        self.aggregates = tracking.AggregateTracker()
        self.instances = tracking.InstanceTracker(
            self.source, CONF.filter_scheduler.track_instance_changes)
        self.refresher = refresh.Refresher(self.source, self.aggregates,
                                           self.instances, self.state_class)
        # (HostState, instance uuid) that ``consume`` added to the
        # state's instances since the last refresh.
        self._placed: list[tuple[HostState, str]] = []
        # Nova database mode: the reader of the instances' image
        # properties in their cells, lent to every HostState
        # (``IMAGE_PROPS_ATTRIBUTE``); None on our own schema.
        self.image_props = getattr(self.source, 'image_props_reader', None)
        self._lent_to: HostTable | None = None
        self.aggregates.set_hosts(self.source.compute_node_get_hosts(context))
        self.aggregates.load(context, self.source)
        if self.instances.track:
            with self.lock:
                self.instances.load(context)

    @staticmethod
    def state_class(compute: dict[str, Any]) -> type[HostState]:
        """The HostState class of a node, from its ``compute_nodes`` row
        (a dict)."""
        return HostState

    # -- the view ----------------------------------------------------------

    @property
    def table(self) -> HostTable:
        """The HostTable over the HostStates (rows in compute node id
        order); replaced when the set of nodes changes."""
        return self.refresher.table

    @property
    def host_state_map(self) -> dict[tuple[str, str], HostState]:
        """``{(host, nodename): HostState}``."""
        return self.refresher.host_state_map

    @property
    def aggs_by_id(self) -> dict[int, Any]:
        return self.aggregates.aggs_by_id

    @property
    def host_aggregates_map(self) -> dict[str, tuple[int, ...]]:
        return self.aggregates.host_aggregates_map

    def get_all_host_states(self, context: Any) -> list[HostState]:
        """Refresh and return the HostStates of every live compute node,
        in ``compute_nodes.id`` order (the rows of ``self.table``).  Down
        or disabled services are kept: only ComputeFilter removes them.
        """
        with self.lock:
            self._placed = []
            states = self.refresher.refresh(context)
            self._lend_image_props()
            return states

    def _lend_image_props(self) -> None:
        """Give the HostStates of a new table the image properties
        reader (a table's HostStates are fixed: a new node makes a new
        table)."""
        if self.image_props is not None and self._lent_to is not self.table:
            for state in self.table.states:
                setattr(state, IMAGE_PROPS_ATTRIBUTE, self.image_props)
            self._lent_to = self.table

    # -- aggregates --------------------------------------------------------

    def update_aggregates(self, aggregates: Any) -> None:
        """Add or replace aggregates (list, AggregateList or one
        Aggregate); hosts no longer listed leave the aggregate (as in
        Nova)."""
        with self.lock:
            self.refresher.apply_aggregates(
                self.aggregates.update(aggregates))

    def delete_aggregate(self, aggregate: Any) -> None:
        """Forget ``aggregate`` and its memberships."""
        with self.lock:
            self.refresher.apply_aggregates(
                self.aggregates.delete(aggregate))

    def aggregates_for(self, host: str) -> list[Any]:
        """The Aggregate objects of a service host, ordered by id."""
        return self.aggregates.aggregates_for(host)

    # -- instance tracking -------------------------------------------------

    def update_instance_info(self, context: Any, host_name: str,
                             instance_info: Any) -> None:
        """Merge an InstanceList reported by ``host_name`` (see
        ``InstanceTracker.update``)."""
        with self.lock:
            self.instances.update(context, host_name, instance_info)
            self.refresher.apply_instances([host_name])

    def delete_instance_info(self, context: Any, host_name: str,
                             instance_uuid: str) -> None:
        """Forget an instance deleted on ``host_name``.

        The host's nodes are read again at the next refresh, dropping
        their virtual consumption: the instance's claim is released from
        their rows, and a release written within the second of our
        consumption would otherwise pass for older than it where the
        database keeps whole seconds (MySQL).
        """
        with self.lock:
            self.forget_consumption(self.refresher.states_of([host_name]))
            self.instances.delete(context, host_name, instance_uuid)
            self.refresher.apply_instances([host_name])

    def sync_instance_info(self, context: Any, host_name: str,
                           instance_uuids: Iterable[str]) -> None:
        """Compare the host's full uuid list with ours; re-read on
        drift."""
        with self.lock:
            if self.instances.sync(context, host_name, instance_uuids):
                self.refresher.apply_instances([host_name])

    # -- consumption -------------------------------------------------------

    def consume(self, state: HostState, spec_obj: Any,
                instance_uuid: str | None = None) -> None:
        """``state.consume_from_request(spec_obj)``, keeping the table
        current.  With ``instance_uuid``, the instance also counts among
        the host's instances from now on, as Nova's filter scheduler adds
        it when it consumes the selected host (Mitaka onwards): the
        server group filters and the soft-(anti-)affinity weighers of
        the request's next instances count it.  It stays until the
        host's instances are read or reported again, unless the
        consumption is forgotten before the next refresh.  An instance
        that already runs on a host (a move: one instance per request)
        is not added: its host is the move's source
        (``scheduler.engine.moves``)."""
        with self.lock:
            state.consume_from_request(spec_obj)
            synced = [state]
            if instance_uuid and not len(
                    self.table.rows_with_instance(instance_uuid)):
                state.instances[instance_uuid] = instance_obj.Instance.placed(
                    instance_uuid, state.host, state.nodename, spec_obj)
                self._placed.append((state, instance_uuid))
                # The nodes of a host share its instances.
                synced = self.refresher.states_of([state.host])
            self.table.sync(synced, part='usage')

    def keep_consumption(self, states: Iterable[HostState]) -> None:
        """Mark the consumption of ``states`` (one per instance claimed)
        as newer than the claims just written on their nodes, so that the
        next refresh keeps it instead of taking our own claim write for
        the node's usage report (the claim of a request is written after
        its instances consumed), and count the generation those claims
        gave each row (``HostState.own_generation``): a row with a later
        one holds other writes too, and is copied."""
        now = timeutils.utcnow()
        with self.lock:
            states = list(states)
            # {id(state): instances claimed on it}
            claimed = collections.Counter(map(id, states))
            for state in {id(state): state for state in states}.values():
                state.updated = now
                base = (state.generation if state.own_generation is None
                        else state.own_generation)
                state.own_generation = base + claimed[id(state)]
            # The instances their request added stay (see ``consume``).
            self._placed = [(state, uuid) for state, uuid in self._placed
                            if id(state) not in claimed]

    def forget_consumption(self, states: Iterable[HostState]) -> None:
        """Drop the virtual consumption of ``states``: the next refresh
        copies their compute node rows again (Nova resets ``updated``)."""
        with self.lock:
            states = list(states)
            for state in states:
                state.updated = None
            self._forget_placed(states)
            self.refresher.reread(states)

    def _forget_placed(self, states: list[HostState]) -> None:
        """Drop the instances ``consume`` added to ``states`` since the
        last refresh (their request did not keep them)."""
        ids = {id(state) for state in states}
        kept = []
        for state, uuid in self._placed:
            if id(state) in ids:
                state.instances.pop(uuid, None)
            else:
                kept.append((state, uuid))
        if len(kept) < len(self._placed):
            self._placed = kept
            self.table.sync(self.refresher.states_of(
                {state.host for state in states}))

