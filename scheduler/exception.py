"""Exceptions raised by the scheduler, with Nova's names and messages.

Every exception carries a message a caller can act on.  Over RPC the
caller receives them as remote errors: ``SchedulerAPI`` re-raises them as
the same classes (``scheduler.exception`` is in its allowed remote
modules); other callers see ``RemoteError`` with the class name and
message.  Messages follow ``nova/exception.py`` (reference section 7.2).
"""


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
    the per-filter history goes to the log (Nova quirk 15)."""

    msg_fmt = 'No valid host was found. %(reason)s'


class MaxRetriesExceeded(NoValidHost):
    msg_fmt = 'Exceeded maximum number of retries. %(reason)s'


class InvalidRequestSpec(Invalid):
    """A ``select_destinations`` request that cannot be scheduled as sent:
    a missing flavor, a negative size, a wrong type, an unknown object."""

    msg_fmt = 'Invalid request spec: %(reason)s'


class InvalidObjectPrimitive(Invalid):
    """A message argument that is not a readable versioned object."""

    msg_fmt = 'Cannot read a versioned object from the message: %(reason)s'


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
    disabled, not enough memory or disk); see ``scheduler.live_migration``.
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
