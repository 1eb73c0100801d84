"""The driver contract shared by the filter and chance schedulers.

A driver owns a HostManager (the host view), a Pipeline (filters and
weighers, ``scheduler.engine.pipeline``) and a Reservation (claims,
``scheduler.engine.reservation``), and answers ``select_destinations`` with one
list of ``Selection`` objects per instance (the chosen host first, then
alternates), or raises NoValidHost.  It follows Nova's driver API of
Queens; with ``[scheduler] use_placement`` the candidates and claims are
Placement's (``scheduler.placement``).
"""

import random

from scheduler import host_manager
from scheduler import servicegroup
from scheduler.conf import CONF
from scheduler.engine import pipeline
from scheduler.engine import reservation
from scheduler.placement import client as placement_client
from scheduler.placement import reservation as placement_reservation
from scheduler.placement import view as placement_view


class Scheduler:
    """Base class of scheduler drivers."""

    def __init__(self, context, notifier=None):
        self.host_manager = host_manager.load(context)
        self.notifier = notifier
        self.random = random.Random(CONF.scheduler.random_seed)
        # Placement mode: its view is loaded before the service answers.
        self.placement = (placement_view.from_config(CONF)
                          if CONF.scheduler.use_placement else None)
        # Loading the plug-ins checks their names at start (any driver).
        self.pipeline = pipeline.Pipeline(self.host_manager, self.random,
                                          self.placement)
        self.reservation: reservation.Reservation = (
            reservation.SqlReservation() if self.placement is None else
            placement_reservation.PlacementReservation(
                self.placement, placement_client.PlacementClient(conf=CONF)))

    def run_periodic_tasks(self, context):
        """Hook run every ``[scheduler] periodic_task_interval`` seconds."""

    def stop(self):
        """Release what the driver holds beyond its decisions: in
        Placement mode, the Placement view's usage watch and database
        connections."""
        if self.placement is not None:
            self.placement.close()

    def hosts_up(self, context, host_states):
        """The HostStates whose compute service is enabled and up."""
        return [state for state in host_states
                if state.service and not state.service.get('disabled')
                and servicegroup.service_is_up(state.service)]

    def select_destinations(self, context, spec_obj, instance_uuids=None,
                            return_alternates=False):
        """Return a list of lists of Selection, one list per instance.

        Raises NoValidHost when the request cannot be met.
        """
        raise NotImplementedError()

    @staticmethod
    def num_instances(spec_obj, instance_uuids):
        """``len(instance_uuids)`` when given, else ``num_instances``."""
        if instance_uuids:
            return len(instance_uuids)
        return spec_obj.get('num_instances', 1)
