"""``scheduler-manage server boot|delete``: a boot as Nova's conductor asks.

``server boot`` sends ONE ``select_destinations`` call over RPC to the
running schedulers (``[DEFAULT] transport_url``), as Nova 34's conductor
does for a boot (``schedule_and_build_instances``): a RequestSpec of the
flags (the flags of ``explain``, ``manage_explain.add_request_arguments``),
one generated instance uuid per instance, ``return_objects`` and
``return_alternates`` set (RPC 4.5).  It prints one row per instance:
its uuid, the host and node chosen and the alternates (``host/node``,
as Nova keeps them for a re-schedule).  Nothing is built: no instance
row is written, and no compute host is asked.

With ``[scheduler] claim_resources`` (the default) the scheduler claims
the chosen node's resources for each instance: ``host list`` counts
them under ``CLAIMED``.  The claim stays until ``server delete HOST
INSTANCE`` releases it (the ``delete_instance_info`` cast a
``nova-compute`` sends when an instance is deleted), or until ``[scheduler]
claim_timeout`` (300 s) after the boot, since no compute host records
the instance.

Exit status: 0 when every instance is placed; ``NO_VALID_HOST`` (3)
with one line on stderr when the scheduler answers NoValidHost (the
service logs why; ``explain`` shows it host by host); 1 with one line
when the call fails otherwise (no answer within ``--timeout``, a
request the service refuses).
"""

from __future__ import annotations

import typing

from cliff import command
from cliff import lister
from oslo_log import log as logging

from scheduler.cmd import manage_common
from scheduler.cmd import manage_explain
from scheduler.conf import CONF

LOG = logging.getLogger(__name__)

# Seconds ``server boot`` waits for the answer by default.
TIMEOUT = 60

COLUMNS = ('Instance', 'Host', 'Node', 'Alternates')

CLAIM_HELP = (
    'With [scheduler] claim_resources (the default) the scheduler claims '
    'the resources of the chosen node for each instance; the claim stays '
    'until "scheduler-manage server delete HOST INSTANCE" releases it (the '
    'delete_instance_info cast nova-compute sends for a deleted instance), '
    'or expires claim_timeout seconds (300) after the boot, since no '
    'compute host records the instance.')


def _client(timeout: float | None) -> typing.Any:
    """A SchedulerAPI on ``[DEFAULT] transport_url`` (oslo.messaging's
    defaults set first), ``timeout`` seconds for a call."""
    from scheduler import rpc
    from scheduler.server import rpcapi

    rpc.set_defaults(CONF)
    return rpcapi.SchedulerAPI(rpc.get_transport(CONF), timeout=timeout)


def boot_request(args: typing.Any) -> tuple[typing.Any, list[str]]:
    """``(RequestSpec, instance uuids)`` of the flags, as the conductor
    sends them: the spec's defaults set, ``instance_uuid`` the first of
    the ``num_instances`` generated uuids."""
    from oslo_utils import uuidutils

    spec_obj = manage_explain.spec_from_flags(args).ensure_defaults()
    uuids = [spec_obj.instance_uuid] + [
        uuidutils.generate_uuid()
        for _ in range(spec_obj.num_instances - 1)]
    return spec_obj, uuids


def rows(uuids: list[str], selections: list[list[typing.Any]]
         ) -> list[tuple[str, str, str, manage_common.FormattedList]]:
    """One row per instance: uuid, chosen host and node, alternates."""
    return [(uuid, chosen.service_host, chosen.nodename,
             manage_common.FormattedList([
                 '%s/%s' % (alternate.service_host, alternate.nodename)
                 for alternate in alternates]))
            for uuid, (chosen, *alternates) in zip(uuids, selections,
                                                   strict=True)]


class ServerBoot(manage_common.DatabaseCommand, lister.Lister):
    """Ask the running schedulers for hosts, as Nova's conductor does."""

    needs_schema = False

    def get_description(self) -> str:
        return '%s\n\n%s\n\n%s' % (
            super().get_description(),
            'Sends one select_destinations call (RPC 4.5, return_objects '
            'and return_alternates) with a RequestSpec of the flags and a '
            'generated uuid per instance; prints the host and node chosen '
            'for each instance and its alternates.  Nothing is built.  Exit '
            'status: 0 when placed, 3 on NoValidHost (one line on stderr; '
            '"explain" with the same flags says why), 1 when the call '
            'fails.', CLAIM_HELP)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        manage_explain.add_request_arguments(parser)
        parser.add_argument('--timeout', type=int, default=TIMEOUT,
                            metavar='SECONDS',
                            help='how long to wait for the answer '
                            '(default: %d)' % TIMEOUT)
        return parser

    def run(self, parsed_args) -> int:
        from scheduler import exception

        try:
            return super().run(parsed_args)
        except exception.NoValidHost as exc:
            # A remote error's text goes on with the service's traceback.
            self.refuse(str(exc).splitlines()[0])
            return manage_common.NO_VALID_HOST
        except _messaging_timeout():
            return self.refuse(
                'no scheduler answered within %s s: is scheduler-service '
                'running on [DEFAULT] transport_url?' % parsed_args.timeout)
        except manage_explain.failures() + _messaging_failures() as exc:
            return self.refuse((str(exc) or type(exc).__name__).splitlines(
            )[0])

    def take_action(self, parsed_args):
        from scheduler import context as scheduler_context

        spec_obj, uuids = boot_request(parsed_args)
        client = _client(parsed_args.timeout)
        try:
            selections = client.select_destinations(
                scheduler_context.get_admin_context(), spec_obj, uuids,
                return_objects=True, return_alternates=True)
        finally:
            client.transport.cleanup()
        return COLUMNS, rows(uuids, selections)


def _messaging_timeout() -> type[Exception]:
    import oslo_messaging

    return oslo_messaging.MessagingTimeout


def _messaging_failures() -> tuple[type[Exception], ...]:
    import oslo_messaging

    return (oslo_messaging.MessagingException,)


class ServerDelete(manage_common.DatabaseCommand):
    """Tell the schedulers an instance was deleted (releases its claim)."""

    needs_schema = False

    def get_description(self) -> str:
        return '%s\n\n%s' % (
            super().get_description(),
            'Casts delete_instance_info(HOST, INSTANCE) to every scheduler, '
            'as nova-compute does when it deletes an instance: the '
            'schedulers forget the instance on HOST and, with [scheduler] '
            'claim_resources, release its claim (a claim "server boot" '
            'made, say).  A cast is not answered: exit status 0 once it is '
            'sent, 1 when it cannot be.')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('host', metavar='HOST',
                            help='the host the instance was placed on')
        parser.add_argument('instance', metavar='INSTANCE',
                            help='the instance uuid')
        return parser

    def run(self, parsed_args) -> int:
        try:
            return super().run(parsed_args)
        except (ValueError,) + _messaging_failures() as exc:
            return self.refuse(str(exc))

    def take_action(self, parsed_args):
        from oslo_utils import uuidutils

        from scheduler import context as scheduler_context

        if not uuidutils.is_uuid_like(parsed_args.instance):
            raise ValueError('%r is not an instance uuid'
                             % parsed_args.instance)
        client = _client(None)
        try:
            client.client = client.client.prepare(
                retry=manage_common.CAST_RETRIES)
            client.delete_instance_info(
                scheduler_context.get_admin_context(), parsed_args.host,
                parsed_args.instance)
        finally:
            client.transport.cleanup()
        return 0


COMMANDS: dict[str, type[command.Command]] = {
    'server boot': ServerBoot,
    'server delete': ServerDelete,
}
