"""Exceptions raised by the scheduler, with Nova's names and messages.

Every exception carries a message a caller can act on.  Messages follow
``nova/exception.py``.

Over RPC, oslo.messaging sends a failure as the module and name of the
exception's class, its arguments and keyword arguments; the caller
rebuilds it only when that module is in its ``allowed_remote_exmods``
(Nova's: ``nova.exception``), else it gets a ``RemoteError`` naming the
class.  So the errors Nova's conductor catches travel under Nova's
names: ``as_nova(exc)`` (the manager calls it for every error leaving an
endpoint towards a Nova caller) gives ``exc`` the class
``nova.exception.<name>`` of ``NOVA_NAMES``, a subclass of its own class
made here without importing Nova.  A Nova caller then catches
``nova.exception.NoValidHost`` and the others; errors Nova has no class
for (``InvalidRequestSpec``, ``ObjectVersionNotSupported``,
``DatabaseUnavailable``...) keep the module ``scheduler.exception`` and
reach Nova as a ``RemoteError`` naming them.
``SchedulerAPI`` understands both forms: ``scheduler.exception`` is in
its allowed modules, and ``from_remote_error`` turns a RemoteError
carrying one of Nova's names back into our class.
"""

NOVA_MODULE = 'nova.exception'


class SchedulerException(Exception):
    """Base class: formats ``msg_fmt`` with the keyword arguments.

    A missing keyword never hides the error: the unformatted message is
    used instead.
    """

    msg_fmt = 'An unknown exception occurred.'
    code = 500

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if not message:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError, ValueError):
                message = self.msg_fmt
        self.message = message
        super().__init__(message)

    def format_message(self):
        return self.message


class Invalid(SchedulerException):
    msg_fmt = 'Invalid input received: %(reason)s'
    code = 400


class NotFound(SchedulerException):
    msg_fmt = 'Resource could not be found.'
    code = 404


class NoValidHost(SchedulerException):
    """No host can take the request.  ``reason`` says why, without detail:
    the per-filter history goes to the log only, as in Nova, whose reply
    never says which filter removed the hosts."""

    msg_fmt = 'No valid host was found. %(reason)s'


class MaxRetriesExceeded(NoValidHost):
    msg_fmt = 'Exceeded maximum number of retries. %(reason)s'


class InvalidRequestSpec(Invalid):
    """A ``select_destinations`` request that cannot be scheduled as sent:
    a missing flavor, a negative size, a wrong type, an unknown object."""

    msg_fmt = 'Invalid request spec: %(reason)s'


class RequestGroupSuffixConflict(InvalidRequestSpec):
    """Two request groups of one request share a suffix (a port's or
    device profile's ``requester_id`` that is also a flavor group's)."""

    msg_fmt = 'Duplicate request group suffix %(suffix)s.'


class InvalidObjectPrimitive(Invalid):
    """A message argument that is not a readable versioned object."""

    msg_fmt = 'Cannot read a versioned object from the message: %(reason)s'


class ObjectVersionNotSupported(InvalidObjectPrimitive):
    """An object (possibly nested) of a version this service cannot read:
    a newer minor version than ours, or another major version.  Nova
    never backports objects for a scheduler, so the caller is newer than
    Nova 34.0.0, whose versions we read.  ``objname``, ``objver`` (the
    version received) and ``supported`` (ours) are strings."""

    msg_fmt = ('Cannot read a versioned object from the message: '
               '%(objname)s version %(objver)s is not supported; this '
               'scheduler reads %(objname)s up to version %(supported)s.')


class PlacementRequired(NoValidHost):
    """The request asks for resources or traits only Placement tracks
    (``resources:VGPU=1``, ``trait:X=required``, port or accelerator
    request groups...): this scheduler has no Placement and refuses it
    rather than pick a host that may lack them.  ``reason`` names what
    was asked for.  A NoValidHost, as Nova's scheduler raises when
    Placement has no candidate; it reaches Nova as
    ``nova.exception.NoValidHost``."""


class InvalidCastArguments(Invalid):
    """A cast whose arguments do not have the documented shape."""

    msg_fmt = 'Invalid arguments for %(method)s: %(reason)s'


class SchedulerHostFilterNotFound(NotFound):
    msg_fmt = 'Scheduler Host Filter %(filter_name)s could not be found.'


class SchedulerDriverNotFound(NotFound):
    msg_fmt = 'Scheduler driver %(driver_name)s could not be found.'


class ClassNotFound(NotFound):
    msg_fmt = 'Class %(class_name)s could not be found: %(exception)s'


class ComputeHostMetricNotFound(NotFound):
    msg_fmt = ('Metric %(name)s could not be found on the compute host node '
               '%(host)s.%(node)s.')


class ComputeHostNotFound(NotFound):
    msg_fmt = 'Compute host %(host)s could not be found.'


class MigrationPreCheckError(SchedulerException):
    """A requested live-migration destination fails a pre-check (down,
    disabled, not enough memory or disk); see
    ``scheduler.engine.live_migration``.
    """

    msg_fmt = 'Migration pre-check error: %(reason)s'
    code = 400


class UnsupportedPolicyException(Invalid):
    msg_fmt = 'ServerGroup policy is not supported: %(reason)s'


class SelectionObjectsWithOldRPCVersionNotSupported(SchedulerException):
    msg_fmt = ('Requests for Selection objects with alternates are not '
               'supported in select_destinations() before RPC version 4.5; '
               'version %(version)s requested.')


class DatabaseUnavailable(SchedulerException):
    """The database could not be reached while answering a request."""

    msg_fmt = 'The scheduler database is unavailable: %(reason)s'
    code = 503



class PlacementUnavailable(SchedulerException):
    """The Placement API could not be reached, or answered an error,
    while claiming or releasing (Placement mode): nothing was claimed
    for the request."""

    msg_fmt = 'The Placement service is unavailable: %(reason)s'
    code = 503


class NeutronUnavailable(SchedulerException):
    """Neutron could not be reached or answered an error (the request
    ends with it, as Nova's NovaException does)."""

    msg_fmt = 'Neutron is unavailable: %(reason)s'
    code = 503


class PortNotFound(NotFound):
    """A requested port does not exist in Neutron (Nova's
    PortNotFound)."""

    msg_fmt = 'Port id %(port_id)s could not be found.'


class InvalidRoutedNetwork(SchedulerException):
    """Neutron could not say which segments a network or subnet is on
    (Nova's InvalidRoutedNetworkConfiguration)."""

    msg_fmt = 'Invalid routed network configuration: %(reason)s'


# Our class -> the class of ``nova.exception`` a Nova caller catches for
# it (all in Nova 34.0.0 and since Ocata, but
# SelectionObjectsWithOldRPCVersionNotSupported: since Queens; an older
# Nova gets a RemoteError naming it).  ``Invalid``'s message is Nova's
# InvalidInput's.  Only these classes, not their subclasses, travel under
# Nova's names.  The first class of a name is the one
# ``from_remote_error`` rebuilds.
NOVA_NAMES = {
    NoValidHost: 'NoValidHost',
    MaxRetriesExceeded: 'MaxRetriesExceeded',
    ComputeHostNotFound: 'ComputeHostNotFound',
    UnsupportedPolicyException: 'UnsupportedPolicyException',
    MigrationPreCheckError: 'MigrationPreCheckError',
    SelectionObjectsWithOldRPCVersionNotSupported:
        'SelectionObjectsWithOldRPCVersionNotSupported',
    ComputeHostMetricNotFound: 'ComputeHostMetricNotFound',
    SchedulerHostFilterNotFound: 'SchedulerHostFilterNotFound',
    ClassNotFound: 'ClassNotFound',
    Invalid: 'InvalidInput',
    NotFound: 'NotFound',
    PortNotFound: 'PortNotFound',
    PlacementRequired: 'NoValidHost',
}


def _nova_twin(cls, name):
    """A subclass of ``cls`` that oslo.messaging names
    ``nova.exception.<name>``."""
    return type(name, (cls,), {
        '__module__': NOVA_MODULE, '__qualname__': name,
        '__doc__': '%s, sent as %s.%s.' % (cls.__name__, NOVA_MODULE, name)})


_TWINS = {cls: _nova_twin(cls, name) for cls, name in NOVA_NAMES.items()}
_FROM_NOVA: dict[str, type] = {}
for _cls, _name in NOVA_NAMES.items():
    _FROM_NOVA.setdefault(_name, _cls)


def as_nova(exc):
    """Give ``exc`` the class ``nova.exception.<name>`` when its class is
    in NOVA_NAMES (in place: message, arguments and traceback are kept,
    and it is still an instance of its class); return ``exc``."""
    twin = _TWINS.get(type(exc))
    if twin is not None:
        exc.__class__ = twin
    return exc


def from_remote_error(error):
    """Our exception for an oslo.messaging ``RemoteError`` whose
    ``exc_type`` is one of Nova's names in NOVA_NAMES (message: the remote
    one, ``value``), else ``error`` itself.  (Read by attribute, so that
    this module does not import oslo.messaging.)"""
    cls = _FROM_NOVA.get(getattr(error, 'exc_type', None))
    if cls is None:
        return error
    return cls(message=getattr(error, 'value', None))
