"""SchedulerAPI: the client side of the scheduler RPC API.

This is Nova's scheduler API (``nova/scheduler/rpcapi.py``), so that a
caller written for Nova, or Nova's conductor itself, can use this service.

API version history (Nova's)::

    1.0 - initial.
    1.1 - prep_resize takes instance and instance_type, drops topic.
    1.2 - run_instance drops topic.
    1.3 - live_migration takes instance.
    1.4 - prep_resize drops update_db.
    1.5 - prep_resize takes reservations.
    1.6 - run_instance drops reservations.
    1.7 - adds create_volume; live_migration drops topic.
    2.0 - drops 1.x compatibility.
    2.1 - create_volume takes image_id.
    2.2 - create_volume drops reservations.
    2.3 - removes create_volume.
    2.4 - update_service_capabilities takes a list of capabilities.
    2.5 - adds get_backdoor_port.
    2.6 - adds select_hosts (Grizzly).
    2.7 - adds select_destinations(request_spec, filter_properties).
    2.8 - no change ("deprecate prep_resize -- just kidding").
    2.9 - run_instance takes legacy_bdm_in_spec (Havana).
    3.0 - drops 2.x compatibility (Icehouse, Juno).
    3.1 - select_destinations sends a Flavor object.
    4.0 - drops 3.x compatibility: only select_destinations remains.
    4.1 - adds update_aggregates and delete_aggregate (fanout casts).
    4.2 - adds update_instance_info, delete_instance_info and
          sync_instance_info (fanout casts) (Kilo, Liberty).
    4.3 - select_destinations takes a RequestSpec (spec_obj)
          (Mitaka, Newton, Ocata).
    4.4 - select_destinations takes instance_uuids (Pike).
    4.5 - select_destinations takes return_objects and return_alternates
          and can return lists of Selection objects (Queens and later).

``[upgrade_levels] scheduler`` caps the version sent, by number or by
release name; ``select_destinations`` steps down to what the cap allows,
ending with the 4.0 legacy dicts.

Errors come back as our ``scheduler.exception`` classes whichever way
the service sent them: under our module (older services of ours) or under
Nova's names (``nova.exception.NoValidHost``..., as this service sends
them so that Nova's conductor can catch them; ``exception.NOVA_NAMES``),
which oslo.messaging hands us as a ``RemoteError`` that
``exception.from_remote_error`` turns back into our class.
"""

import oslo_messaging as messaging

from scheduler import exception
from scheduler import rpc
from scheduler.conf import CONF

VERSION_ALIASES = {
    'grizzly': '2.6',
    'havana': '2.9',
    'icehouse': '3.0',
    'juno': '3.0',
    'kilo': '4.2',
    'liberty': '4.2',
    'mitaka': '4.3',
    'newton': '4.3',
    'ocata': '4.3',
    'pike': '4.4',
    'queens': '4.5',
}

LATEST_VERSION = '4.5'


class SchedulerAPI:
    """Client of the ``scheduler`` topic.

    ``transport`` is an oslo.messaging RPC transport (default: one built
    from ``[DEFAULT] transport_url``).  Call timeouts come from
    ``[DEFAULT] rpc_response_timeout`` unless ``timeout`` is given.
    """

    def __init__(self, transport=None, timeout=None):
        self.transport = transport or rpc.get_transport(CONF)
        target = messaging.Target(topic=rpc.TOPIC, version='4.0')
        cap = CONF.upgrade_levels.scheduler
        version_cap = VERSION_ALIASES.get(cap, cap)
        self.client = rpc.get_client(self.transport, target,
                                     version_cap=version_cap,
                                     timeout=timeout)

    def select_destinations(self, ctxt, spec_obj, instance_uuids=None,
                            return_objects=False, return_alternates=False):
        """Ask a scheduler where to put the instances of ``spec_obj``.

        Returns a list of ``{'host', 'nodename', 'limits'}`` dicts, one per
        instance, or with ``return_objects`` a list of lists of Selection
        (chosen host first, then alternates when ``return_alternates``).
        Raises NoValidHost, InvalidRequestSpec, ObjectVersionNotSupported,
        DatabaseUnavailable, or SelectionObjectsWithOldRPCVersionNotSupported
        when the version cap is below 4.5 and objects were asked for.
        """
        version = '4.5'
        msg_args = {'spec_obj': spec_obj, 'instance_uuids': instance_uuids,
                    'return_objects': return_objects,
                    'return_alternates': return_alternates}
        if not self.client.can_send_version(version):
            if return_objects or return_alternates:
                raise exception.SelectionObjectsWithOldRPCVersionNotSupported(
                    version=self.client.version_cap)
            version = '4.4'
            del msg_args['return_objects'], msg_args['return_alternates']
        if not self.client.can_send_version(version):
            version = '4.3'
            del msg_args['instance_uuids']
        if not self.client.can_send_version(version):
            version = '4.0'
            msg_args = {
                'request_spec': spec_obj.to_legacy_request_spec_dict(),
                'filter_properties':
                    spec_obj.to_legacy_filter_properties_dict()}
        cctxt = self.client.prepare(version=version)
        try:
            return cctxt.call(ctxt, 'select_destinations', **msg_args)
        except messaging.RemoteError as exc:
            ours = exception.from_remote_error(exc)
            if ours is exc:
                raise
            raise ours from exc

    def update_aggregates(self, ctxt, aggregates):
        """Fanout: the aggregates (list of Aggregate) were created/changed."""
        self._fanout('4.1').cast(ctxt, 'update_aggregates',
                                 aggregates=aggregates)

    def delete_aggregate(self, ctxt, aggregate):
        """Fanout: ``aggregate`` was deleted."""
        self._fanout('4.1').cast(ctxt, 'delete_aggregate',
                                 aggregate=aggregate)

    def update_instance_info(self, ctxt, host_name, instance_info):
        """Fanout: ``host_name`` has these instances (an InstanceList)."""
        self._fanout('4.2').cast(ctxt, 'update_instance_info',
                                 host_name=host_name,
                                 instance_info=instance_info)

    def delete_instance_info(self, ctxt, host_name, instance_uuid):
        """Fanout: the instance was deleted from ``host_name``."""
        self._fanout('4.2').cast(ctxt, 'delete_instance_info',
                                 host_name=host_name,
                                 instance_uuid=instance_uuid)

    def sync_instance_info(self, ctxt, host_name, instance_uuids):
        """Fanout: the full list of instance uuids on ``host_name``."""
        self._fanout('4.2').cast(ctxt, 'sync_instance_info',
                                 host_name=host_name,
                                 instance_uuids=instance_uuids)

    def _fanout(self, version):
        return self.client.prepare(fanout=True, version=version)
