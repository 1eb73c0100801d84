"""Placement request objects a RequestSpec carries (Nova 34.0.0 versions).

``RequestGroup`` (v1.3; RequestSpec.requested_resources, Stein): one group
of an allocation-candidates query, from a Neutron port's resource request
(QoS bandwidth, packet rate) or a Cyborg device profile: ``resources``
(resource class -> amount), required / forbidden traits, aggregates.
``RequestLevelParams`` (v1.1; RequestSpec.request_level_params, Ussuri):
traits required or forbidden on the root provider and ``same_subtree``
lists of group suffixes.  This service has no Placement: a request using
them is refused (``RequestSpec.placement_only_requests``).
"""

from oslo_versionedobjects import fields

from scheduler.objects import base


@base.register
class RequestGroup(base.SchedulerObject):
    VERSION = '1.3'

    fields = {
        'use_same_provider': fields.BooleanField(default=True),
        'resources': fields.DictOfIntegersField(default={}),
        'required_traits': fields.SetOfStringsField(default=set()),
        'forbidden_traits': fields.SetOfStringsField(default=set()),
        'aggregates': base.ListOfListsOfStringsField(default=[]),
        'forbidden_aggregates': fields.SetOfStringsField(default=set()),
        'requester_id': fields.StringField(nullable=True, default=None),
        'provider_uuids': fields.ListOfUUIDField(default=[]),
        'in_tree': fields.UUIDField(nullable=True, default=None),
    }

    FIELDS_ADDED = {'requester_id': (1, 1), 'provider_uuids': (1, 1),
                    'in_tree': (1, 2), 'forbidden_aggregates': (1, 3)}

    def needs(self):
        """What the group asks of Placement, as ``name=value`` strings
        (resources with a positive amount, traits, aggregates); empty
        when the group asks nothing."""
        asked = ['%s=%s' % (rc, amount) for rc, amount
                 in sorted((self.obj_get('resources') or {}).items())
                 if amount]
        asked += ['trait:%s=required' % trait
                  for trait in sorted(self.obj_get('required_traits') or ())]
        asked += ['trait:%s=forbidden' % trait for trait
                  in sorted(self.obj_get('forbidden_traits') or ())]
        if self.obj_get('aggregates') or self.obj_get('forbidden_aggregates'):
            asked.append('member_of aggregates')
        return asked


@base.register
class RequestLevelParams(base.SchedulerObject):
    VERSION = '1.1'

    fields = {
        'root_required': fields.SetOfStringsField(default=set()),
        'root_forbidden': fields.SetOfStringsField(default=set()),
        'same_subtree': base.ListOfListsOfStringsField(default=[]),
    }

    FIELDS_ADDED = {'same_subtree': (1, 1)}

    def needs(self):
        """What the parameters ask of Placement, as strings; empty when
        nothing."""
        asked = ['root trait %s required' % trait
                 for trait in sorted(self.obj_get('root_required') or ())]
        asked += ['root trait %s forbidden' % trait
                  for trait in sorted(self.obj_get('root_forbidden') or ())]
        if self.obj_get('same_subtree'):
            asked.append('same_subtree groups')
        return asked
