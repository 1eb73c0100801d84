"""Network objects a RequestSpec carries (Nova 34.0.0 versions).

``NetworkMetadata`` (v1.0, Rocky): the physical networks (``physnets``,
names) and whether a tunneled network is attached (``tunneled``) of the
ports requested, for NUMA affinity.  ``NetworkRequest`` (v1.3) /
``NetworkRequestList`` (v1.1): the networks and ports the user asked for
(``RequestSpec.requested_networks``, Yoga).  The scheduler reads them only
to accept the request; no filter of ours uses them yet.
"""

from oslo_versionedobjects import fields

from scheduler.objects import base


@base.register
class NetworkMetadata(base.SchedulerObject):
    VERSION = '1.0'

    fields = {
        'physnets': fields.SetOfStringsField(),
        'tunneled': fields.BooleanField(),
    }


@base.register
class NetworkRequest(base.SchedulerObject):
    """One requested network or port; ``address`` is an IP address."""

    VERSION = '1.3'

    fields = {
        'network_id': fields.StringField(nullable=True),
        'address': fields.IPAddressField(nullable=True),
        'port_id': fields.UUIDField(nullable=True),
        'pci_request_id': fields.UUIDField(nullable=True),
        'tag': fields.StringField(nullable=True),
        'arq_uuid': fields.UUIDField(nullable=True),
        'device_profile': fields.StringField(nullable=True),
    }

    FIELDS_ADDED = {'pci_request_id': (1, 1), 'tag': (1, 2),
                    'arq_uuid': (1, 3), 'device_profile': (1, 3)}


@base.register
class NetworkRequestList(base.ObjectListBase, base.SchedulerObject):
    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('NetworkRequest')}
