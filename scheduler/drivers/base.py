"""The driver contract shared by the filter and chance schedulers.

A driver owns a HostManager (the host view), a Pipeline (filters and
weighers, ``scheduler.engine.pipeline``) and a Reservation (claims,
``scheduler.engine.reservation``), and answers ``select_destinations`` with one
list of ``Selection`` objects per instance (the chosen host first, then
alternates), or raises NoValidHost.  It follows Nova's driver API of
Queens; where its candidates come from and how they are claimed is its
candidate source's (``scheduler.engine.candidates``): every host with
database claims, or Placement's with ``[scheduler] use_placement``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

from scheduler.conf import CONF
from scheduler.engine import candidates
from scheduler.engine import pipeline
from scheduler.engine import reservation
from scheduler.view import loading
from scheduler.view import servicegroup

if TYPE_CHECKING:
    from scheduler.objects.request_spec import RequestSpec
    from scheduler.objects.selection import Selection
    from scheduler.view.host_state import HostState


def candidate_source(conf: Any) -> candidates.CandidateSource:
    """The CandidateSource of ``conf``, with its reservation
    (``scheduler.engine.candidates``): Placement's with ``[scheduler]
    use_placement`` (its view loaded before the service answers; raises
    PlacementUnavailable when it cannot be), else every host of the
    view with database claims."""
    if not conf.scheduler.use_placement:
        return candidates.AllHosts(reservation.SqlReservation())
    from scheduler.placement import client
    from scheduler.placement import source
    from scheduler.placement import view
    return source.PlacementSource(view.from_config(conf),
                                  client.PlacementClient(conf=conf))


class Scheduler:
    """Base class of scheduler drivers."""

    def __init__(self, context: Any, notifier: Any = None) -> None:
        self.host_manager = loading.load_host_manager(context)
        self.notifier = notifier
        self.random = random.Random(CONF.scheduler.random_seed)
        self.candidates = candidate_source(CONF)
        self.reservation: reservation.Reservation = (
            self.candidates.reservation)
        # Loading the plug-ins checks their names at start (any driver).
        self.pipeline = pipeline.Pipeline(self.host_manager, self.random,
                                          self.candidates.check())

    def run_periodic_tasks(self, context: Any) -> None:
        """Hook run every ``[scheduler] periodic_task_interval`` seconds."""

    def stop(self) -> None:
        """Release what the driver holds beyond its decisions (the
        candidate source's: in Placement mode, the Placement view's usage
        watch and database connections)."""
        self.candidates.stop()

    def hosts_up(self, context: Any, host_states: Iterable[HostState]
                 ) -> list[HostState]:
        """The HostStates whose compute service is enabled and up."""
        return [state for state in host_states
                if state.service and not state.service.get('disabled')
                and servicegroup.service_is_up(state.service)]

    def select_destinations(self, context: Any, spec_obj: RequestSpec,
                            instance_uuids: Sequence[str] | None = None,
                            return_alternates: bool = False
                            ) -> list[list[Selection]]:
        """Return a list of lists of Selection, one list per instance.

        Raises NoValidHost when the request cannot be met.
        """
        raise NotImplementedError()

    @staticmethod
    def num_instances(spec_obj: RequestSpec,
                      instance_uuids: Sequence[str] | None) -> int:
        """``len(instance_uuids)`` when given, else ``num_instances``."""
        if instance_uuids:
            return len(instance_uuids)
        return spec_obj.get('num_instances', 1)
