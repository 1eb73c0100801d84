"""SchedulerManager: the RPC endpoint of the ``scheduler`` topic (API 4.5).

It unpacks and checks each message, then hands it to the driver (calls) or
to the driver's host manager (casts), as Nova's manager does.
A malformed ``select_destinations`` is answered with
InvalidRequestSpec; a malformed cast is logged and dropped.  Neither
changes any state, and the server keeps serving.

For a Nova caller (Newton to 34.0.0):

* errors leave a call under Nova's names (``exception.as_nova``): Nova's
  conductor catches ``nova.exception.NoValidHost`` and the others (our
  own clients, which say so in their context, and in-process calls get
  ``scheduler.exception`` classes: ``rpc.nova_caller``);
* a request for what only Placement tracks (``resources:VGPU=1``,
  ``trait:X=required``, port or accelerator request groups, root traits:
  ``RequestSpec.placement_only_requests``) is refused with
  ``PlacementRequired``, a NoValidHost naming what was asked: this
  service has no Placement, and a host picked without it may lack them.
  NoValidHost is what Nova's scheduler raises when Placement has no
  candidate, and what every Nova caller handles (a build puts the
  instance in ERROR with the reason as its fault; resize, live migration,
  unshelve and evacuate give up and say why).  In Placement mode
  (``[scheduler] use_placement``) Placement checks them instead;
* replies are written in the object versions the caller reads
  (``selection.reply_manifest`` of the RequestSpec version it sent).
"""

import functools
import time

import oslo_messaging as messaging
from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_utils import uuidutils
from sqlalchemy import exc as sa_exc

from scheduler import drivers
from scheduler import exception
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.engine import deadline
from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import base as objects_base
from scheduler.objects import instance as instance_obj
from scheduler.objects import request_spec as request_spec_obj
from scheduler.objects import selection as selection_obj
from scheduler.observability import decision_log
from scheduler.observability import metrics

LOG = logging.getLogger(__name__)

_SENTINEL = object()


def _cast_handler(func):
    """Log and drop a cast whose arguments are invalid."""
    @functools.wraps(func)
    def wrapper(self, ctxt, **kwargs):
        try:
            return func(self, ctxt, **kwargs)
        except exception.Invalid as exc:
            LOG.warning('Dropping %s cast: %s', func.__name__, exc)
        except TypeError as exc:
            LOG.warning('Dropping %s cast with bad arguments: %s',
                        func.__name__, exc)
    return wrapper


def _nova_errors(func):
    """Errors of ours leave the endpoint under Nova's names
    (``exception.as_nova``) when the caller is Nova (``rpc.nova_caller``),
    so that it can catch them; a client of ours, or an in-process call,
    gets them as they are."""
    @functools.wraps(func)
    def wrapper(self, ctxt, *args, **kwargs):
        try:
            return func(self, ctxt, *args, **kwargs)
        except exception.SchedulerException as exc:
            if rpc.nova_caller(ctxt):
                exception.as_nova(exc)
            raise
    return wrapper


# The outcome of a decision that raised (``metrics.decision``): the
# first class it is an instance of; any other is ``metrics.ERROR``.
_FAILURES = ((exception.NoValidHost, metrics.NO_VALID_HOST),
             (exception.Invalid, metrics.INVALID),
             (exception.ComputeHostNotFound, metrics.INVALID),
             (exception.DatabaseUnavailable, metrics.DATABASE_UNAVAILABLE),
             (exception.PlacementUnavailable, metrics.PLACEMENT_UNAVAILABLE))


def _recorded(func):
    """Record each decision: its outcome, its seconds and the instances
    it placed (``metrics.decision``)."""
    @functools.wraps(func)
    def wrapper(self, ctxt, *args, **kwargs):
        started = time.perf_counter()
        try:
            selections = func(self, ctxt, *args, **kwargs)
        except Exception as exc:
            outcome = next((outcome for cls, outcome in _FAILURES
                            if isinstance(exc, cls)), metrics.ERROR)
            metrics.decision(outcome, time.perf_counter() - started)
            raise
        metrics.decision(metrics.SUCCESS, time.perf_counter() - started,
                         len(selections))
        return selections
    return wrapper


def _require(condition, method, reason):
    if not condition:
        raise exception.InvalidCastArguments(method=method, reason=reason)


def _is_uuid_list(values, limit=request_spec_obj.MAX_INSTANCES_PER_REQUEST):
    return (isinstance(values, list) and len(values) <= limit and
            all(isinstance(v, str) and uuidutils.is_uuid_like(v)
                for v in values))


def _refuse_placement_only(spec_obj):
    """Raise PlacementRequired when ``spec_obj`` asks for what only
    Placement can check."""
    needs = spec_obj.placement_only_requests()
    if needs:
        raise exception.PlacementRequired(
            reason='This scheduler has no Placement service and cannot '
                   'check what the request asks for: %s.' % '; '.join(needs))


class SchedulerManager:
    """Endpoint for the scheduler RPC API, versions 4.0 to 4.5."""

    target = messaging.Target(version='4.5')

    def __init__(self, context, notifier=None, driver=None):
        self.driver = driver or drivers.load_driver(context,
                                                    notifier=notifier)

    @property
    def host_manager(self):
        return self.driver.host_manager

    @messaging.expose
    @messaging.expected_exceptions(exception.NoValidHost,
                                   exception.Invalid,
                                   exception.DatabaseUnavailable,
                                   exception.PlacementUnavailable,
                                   exception.ComputeHostNotFound)
    @_nova_errors
    @_recorded
    def select_destinations(self, ctxt, request_spec=None,
                            filter_properties=None, spec_obj=_SENTINEL,
                            instance_uuids=None, return_objects=False,
                            return_alternates=False, **unknown):
        """Choose hosts for the instances of a request.

        ``spec_obj`` (4.3+) is a RequestSpec; without it the legacy
        ``request_spec`` / ``filter_properties`` dicts (4.0) are converted.
        Returns a list of ``{'host', 'nodename', 'limits'}`` dicts, one per
        instance, or with ``return_objects`` a list of lists of Selection,
        one per instance (chosen host first, then up to ``max_attempts - 1``
        alternates when ``return_alternates``), in the object versions the
        caller reads.  Raises NoValidHost (PlacementRequired when the
        request needs Placement), or InvalidRequestSpec for a malformed
        request, DatabaseUnavailable when the database cannot be read
        (nothing is consumed then); a Nova caller gets them as
        ``nova.exception`` classes where Nova has one.
        """
        if unknown:
            raise exception.InvalidRequestSpec(
                reason='unknown arguments: %s' % ', '.join(sorted(unknown)))
        manifest = selection_obj.reply_manifest()
        if spec_obj is _SENTINEL:
            spec_obj = request_spec_obj.RequestSpec.from_primitives(
                ctxt, request_spec, filter_properties)
        elif isinstance(spec_obj, request_spec_obj.RequestSpec):
            manifest = selection_obj.reply_manifest(spec_obj.VERSION)
        spec_obj = self.checked_spec(spec_obj, instance_uuids)
        return objects_base.backport(
            self._select(ctxt, spec_obj, instance_uuids, return_objects,
                         return_alternates), manifest)

    def _select(self, ctxt, spec_obj, instance_uuids, return_objects,
                return_alternates):
        return_alternates = bool(return_alternates and return_objects)

        def decide():
            if hasattr(ctxt, "update_store"):
                ctxt.update_store()     # the request id in its logs
            metrics.decision_started()
            try:
                return self.driver.select_destinations(
                    ctxt, spec_obj, instance_uuids, return_alternates)
            except exception.NoValidHost:
                metrics.no_valid_host()     # by the filter that caused it
                raise

        started = time.perf_counter()
        try:
            selections = deadline.run(CONF.scheduler.decision_timeout,
                                      decide)
        except exception.NoValidHost as exc:
            decision_log.refused(ctxt, spec_obj, instance_uuids, exc,
                                 time.perf_counter() - started)
            raise
        except (db_exc.DBError, sa_exc.DBAPIError) as exc:
            # oslo.db translates DBAPI errors into DBError, but not those
            # raised while connecting under SQLAlchemy 2.1 (its
            # handle_error hook is on the engine, 2.1 calls the dialect's).
            LOG.error('Database error while scheduling: %s', exc)
            raise exception.DatabaseUnavailable(
                reason=type(exc).__name__) from exc
        decision_log.selected(ctxt, spec_obj, instance_uuids, selections,
                              time.perf_counter() - started)
        if return_objects:
            return selections
        return [picks[0].to_dict() for picks in selections]

    @staticmethod
    def checked_spec(spec_obj, instance_uuids):
        """``spec_obj`` with its defaults, checked as every call's is (also
        by ``scheduler-manage explain``).  Raises InvalidRequestSpec for a
        spec that is not a RequestSpec, a bad ``instance_uuids`` list or
        an invalid field; PlacementRequired (outside Placement mode) for
        what only Placement can check."""
        if not isinstance(spec_obj, request_spec_obj.RequestSpec):
            raise exception.InvalidRequestSpec(
                reason='spec_obj must be a RequestSpec object, not %s'
                       % type(spec_obj).__name__)
        if instance_uuids is not None and not _is_uuid_list(instance_uuids):
            raise exception.InvalidRequestSpec(
                reason='instance_uuids must be a list of at most %d UUIDs'
                       % request_spec_obj.MAX_INSTANCES_PER_REQUEST)
        spec_obj.ensure_defaults()
        spec_obj.validate()
        if not CONF.scheduler.use_placement:
            _refuse_placement_only(spec_obj)
        return spec_obj

    # -- casts (fanout) --------------------------------------------------

    @messaging.expose
    @_cast_handler
    def update_aggregates(self, ctxt, aggregates):
        """Aggregates were created or changed (a list, an AggregateList or
        one Aggregate)."""
        if isinstance(aggregates, list):
            _require(all(isinstance(a, aggregate_obj.Aggregate)
                         and a.obj_attr_is_set('id') for a in aggregates),
                     'update_aggregates', 'expected Aggregate objects')
        else:
            _require(isinstance(aggregates, (aggregate_obj.Aggregate,
                                             aggregate_obj.AggregateList)),
                     'update_aggregates', 'expected Aggregate objects')
        self.host_manager.update_aggregates(aggregates)

    @messaging.expose
    @_cast_handler
    def delete_aggregate(self, ctxt, aggregate):
        """An aggregate was deleted."""
        _require(isinstance(aggregate, aggregate_obj.Aggregate)
                 and aggregate.obj_attr_is_set('id'),
                 'delete_aggregate', 'expected an Aggregate object')
        self.host_manager.delete_aggregate(aggregate)

    @messaging.expose
    @_cast_handler
    def update_instance_info(self, ctxt, host_name, instance_info):
        """``host_name`` reports instances (an InstanceList)."""
        _require(isinstance(host_name, str) and host_name,
                 'update_instance_info', 'host_name must be a string')
        _require(isinstance(instance_info, instance_obj.InstanceList) and
                 all(i.obj_attr_is_set('uuid') and
                     uuidutils.is_uuid_like(i.uuid)
                     for i in instance_info.objects),
                 'update_instance_info',
                 'instance_info must be an InstanceList with uuids')
        self.host_manager.update_instance_info(ctxt, host_name,
                                               instance_info)

    @messaging.expose
    @_cast_handler
    def delete_instance_info(self, ctxt, host_name, instance_uuid):
        """An instance was deleted from ``host_name``."""
        _require(isinstance(host_name, str) and host_name,
                 'delete_instance_info', 'host_name must be a string')
        _require(isinstance(instance_uuid, str) and
                 uuidutils.is_uuid_like(instance_uuid),
                 'delete_instance_info', 'instance_uuid must be a UUID')
        self.host_manager.delete_instance_info(ctxt, host_name,
                                               instance_uuid)
        if CONF.scheduler.claim_resources:
            self.driver.reservation.release_deleted(ctxt, instance_uuid)

    @messaging.expose
    @_cast_handler
    def sync_instance_info(self, ctxt, host_name, instance_uuids):
        """``host_name`` lists all of its instance uuids."""
        _require(isinstance(host_name, str) and host_name,
                 'sync_instance_info', 'host_name must be a string')
        _require(_is_uuid_list(instance_uuids, limit=10 ** 6),
                 'sync_instance_info', 'instance_uuids must be a list of '
                 'UUIDs')
        self.host_manager.sync_instance_info(ctxt, host_name,
                                             instance_uuids)


class BaseRPCAPI:
    """The ``baseapi`` namespace every Nova service serves (1.1)."""

    target = messaging.Target(namespace='baseapi', version='1.1')

    def __init__(self, service_name='scheduler'):
        self.service_name = service_name

    @messaging.expose
    @messaging.expected_exceptions(exception.Invalid)
    @_nova_errors
    def ping(self, ctxt, arg=_SENTINEL, **unknown):
        """Health check: returns ``{'service': 'scheduler', 'arg': arg}``.

        Raises Invalid unless exactly the one argument ``arg`` is given.
        """
        if arg is _SENTINEL or unknown:
            raise exception.Invalid(
                reason='ping takes exactly one argument, arg')
        return {'service': self.service_name, 'arg': arg}

    @messaging.expose
    def get_backdoor_port(self, ctxt):
        """No eventlet backdoor here: always None."""
        return None
