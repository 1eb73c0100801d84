"""``scheduler-manage explain``: why a request would (not) be placed.

Dry-runs a request against the database with the configured filters and
weighers (``scheduler.engine.explain``), claiming nothing, and prints
each filter's hosts in and out, every removed host with its reason, the
summary grouped by reason, the weights of the best hosts and the host
chosen (best by weight; the service picks at random among the best
``host_subset_size``).  The request comes from the flags, or from
``--spec FILE``: a RequestSpec primitive as a caller sends it, checked
as the service checks one (``SchedulerManager.checked_spec``).

In Placement mode (``[scheduler] use_placement``) the Placement view is
read from ``[placement_database] connection`` as the service reads it,
the request's allocation candidates are computed in memory
(``PlacementCandidatesFilter`` runs first, as in the service), and a
Placement section comes before the filters: how many compute nodes each
requirement of the ``GET /allocation_candidates`` query eliminates,
alone and in order, and the nearest misses
(``scheduler.placement.misses``).
"""

import json
import typing

from cliff import command
from oslo_utils import uuidutils

from scheduler import context as scheduler_context
from scheduler import exception
from scheduler import objects
from scheduler.conf import CONF
from scheduler.drivers import base as drivers_base
from scheduler.engine import explain as explain_engine
from scheduler.objects import base as objects_base
from scheduler.objects import flavor as flavor_obj
from scheduler.objects import image_meta as image_meta_obj
from scheduler.objects import request_spec as request_spec_obj
from scheduler.placement import refusals
from scheduler.placement import source as placement_source

# The flags that size the request, and their defaults without --spec.
SIZE_FLAGS = {'vcpus': 1, 'memory_mb': 512, 'disk_gb': 0,
              'ephemeral_gb': 0, 'swap': 0}


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition('=')
    if not sep or not key:
        raise ValueError('expected KEY=VALUE, not %r' % text)
    return key, value


def _pairs(values: list[str] | None) -> dict[str, str]:
    return dict(_pair(value) for value in values or ())


def spec_from_flags(args: typing.Any) -> typing.Any:
    """A RequestSpec of the command-line flags (unchecked)."""
    sizes = {name: default if getattr(args, name) is None
             else getattr(args, name)
             for name, default in SIZE_FLAGS.items()}
    flavor = flavor_obj.Flavor(
        id=0, name='explain', flavorid='explain', vcpus=sizes['vcpus'],
        memory_mb=sizes['memory_mb'], root_gb=sizes['disk_gb'],
        ephemeral_gb=sizes['ephemeral_gb'], swap=sizes['swap'],
        extra_specs=_pairs(args.extra_spec), is_public=True, disabled=False,
        projects=[], rxtx_factor=1.0)
    hints: dict[str, list[str]] = {}
    for key, value in (_pair(text) for text in args.hint or ()):
        hints.setdefault(key, []).append(value)
    image = None
    if args.image_property:
        image = image_meta_obj.ImageMeta.from_dict(
            {'properties': _pairs(args.image_property)})
    return request_spec_obj.RequestSpec(
        flavor=flavor, num_instances=args.num_instances or 1,
        instance_uuid=uuidutils.generate_uuid(),
        project_id=args.project_id, availability_zone=args.availability_zone,
        scheduler_hints=hints or None, image=image)


def spec_from_file(context: typing.Any, path: str) -> typing.Any:
    """The RequestSpec of a primitive (JSON) in ``path``.

    :raises scheduler.exception.InvalidObjectPrimitive: not one.
    """
    with open(path, encoding='utf-8') as stream:
        primitive = json.load(stream)
    objects.register_all()
    return objects_base.ObjectSerializer().deserialize_entity(context,
                                                              primitive)


def checked(spec_obj: typing.Any) -> typing.Any:
    """``spec_obj`` checked as the service checks a request."""
    from scheduler.server import manager

    return manager.SchedulerManager.checked_spec(spec_obj, None)


class Explain(command.Command):
    """Explain where a request would go, or why nowhere."""

    details = (
        'Dry-runs the request against the database with the configured '
        'filters and weighers (the claims\' check first, with [scheduler] '
        'claim_resources), claiming nothing: each filter\'s hosts in and '
        'out, every removed host with its reason, the hosts available '
        'grouped by reason, the weighers\' values of the best hosts and the '
        'host chosen (best by weight: the service picks at random among '
        'the best host_subset_size).  When nothing fits, the hosts that '
        'fail the fewest filters and what they lack.  In Placement mode, '
        'first how many compute nodes each requirement of the request\'s '
        'allocation candidates query eliminates and the nearest misses '
        '(Placement\'s database is read; its API is not asked).')

    def get_description(self) -> str:
        return '%s\n\n%s' % (super().get_description(), self.details)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--spec', metavar='FILE',
                            help='a RequestSpec primitive (JSON) as a caller '
                            'sends it; excludes the request flags')
        parser.add_argument('--vcpus', type=int, metavar='N',
                            help='default: 1')
        parser.add_argument('--memory-mb', type=int, metavar='MiB',
                            help='default: 512')
        parser.add_argument('--disk-gb', type=int, metavar='GiB',
                            help='root disk; default: 0')
        parser.add_argument('--ephemeral-gb', type=int, metavar='GiB',
                            help='default: 0')
        parser.add_argument('--swap', type=int, metavar='MiB',
                            help='default: 0')
        for flag, what in (('--extra-spec', 'a flavor extra spec'),
                           ('--image-property', 'an image property'),
                           ('--hint', 'a scheduler hint')):
            parser.add_argument(flag, action='append', metavar='K=V',
                                help='%s (repeatable)' % what)
        parser.add_argument('--availability-zone', metavar='AZ')
        parser.add_argument('--num-instances', type=int, metavar='N',
                            help='default: 1')
        parser.add_argument('--project-id', metavar='ID')
        parser.add_argument('-f', '--format', dest='formatter',
                            choices=('table', 'json'), default='table',
                            help='output format (default: table)')
        self._parser = parser
        return parser

    def take_action(self, parsed_args):
        context = scheduler_context.get_admin_context()
        try:
            spec_obj = self._spec(context, parsed_args)
            spec_obj = checked(spec_obj)
        except (OSError, ValueError, exception.SchedulerException) as exc:
            self.app.stderr.write('%s %s: %s\n' % (
                self.app.NAME, self.cmd_name, exc))
            return 1
        try:
            result = _explain(context, spec_obj)
        except exception.SchedulerException as exc:
            self.app.stderr.write('%s %s: %s\n' % (
                self.app.NAME, self.cmd_name, exc))
            return 1
        if parsed_args.formatter == 'json':
            self.app.stdout.write(json.dumps(result.to_dict(), indent=2,
                                             sort_keys=True) + '\n')
        else:
            self.app.stdout.write(render(result))
        return 0

    def _spec(self, context, args):
        if args.spec is None:
            return spec_from_flags(args)
        flags = [name for name in list(SIZE_FLAGS) + [
            'extra_spec', 'image_property', 'hint', 'availability_zone',
            'num_instances', 'project_id'] if getattr(args, name)]
        if flags:
            self._parser.error('--spec excludes --%s' % ', --'.join(
                name.replace('_', '-') for name in flags))
        return spec_from_file(context, args.spec)


def _explain(context: typing.Any, spec_obj: typing.Any
             ) -> explain_engine.Explanation:
    """``explain_engine.explain``; in Placement mode over the Placement
    view (read, then closed), with its misses (``scheduler.placement.
    refusals.explain_view``).  Raises PlacementUnavailable when the view
    cannot be read."""
    if not CONF.scheduler.use_placement:
        return explain_engine.explain(context, spec_obj)
    source = drivers_base.candidate_source(CONF)
    try:
        assert isinstance(source, placement_source.PlacementSource)
        view = source.view
        return explain_engine.explain(
            context, spec_obj, source=source,
            section=lambda: refusals.explain_view(view))
    finally:
        source.stop()


def _number(value: float) -> str:
    text = ('%.4f' % (value + 0.0)).rstrip('0').rstrip('.')
    return '0' if text in ('', '-0') else text


def render(result: explain_engine.Explanation) -> str:
    """The explanation as text."""
    request = result.request
    lines = ['Request: %d x %d vCPUs, %s MiB RAM, %d GiB root + %d GiB '
             'ephemeral disk, %d MiB swap%s' % (
                 request['num_instances'], request['vcpus'],
                 '{:,}'.format(request['memory_mb']), request['root_gb'],
                 request['ephemeral_gb'], request['swap_mb'],
                 ', zone %s' % request['availability_zone']
                 if request['availability_zone'] else '')]
    for name in ('extra_specs', 'image_properties', 'scheduler_hints'):
        if request[name]:
            lines.append('  %s: %s' % (name.replace('_', ' '), ', '.join(
                '%s=%s' % item for item in sorted(request[name].items()))))
    lines.append('')
    if result.placement is not None:
        lines += result.placement.lines() + ['']
    lines.append('Filters (hosts in -> out):')
    for step in result.steps:
        lines.append('  %-34s %d -> %d' % (step.name, step.hosts_in,
                                          step.hosts_out))
        for removed in step.removed:
            lines.append('    %s: %s' % (_where(removed.host, removed.node),
                                         removed.reason))
    if result.forced:
        lines.append('  (forced hosts or nodes: the filters are skipped)')
    lines += ['', result.summary]
    if result.weighed:
        lines += ['', 'Best hosts by weight (weighted = multiplier x '
                  'normalised):']
        for detail in result.weighed:
            lines.append('  %s: weight %s' % (
                _where(detail.host, detail.node), _number(detail.weight)))
            for value in detail.weighers:
                lines.append('    %-34s raw %s, normalised %s, x %s = %s' % (
                    value.name, _number(value.raw),
                    _number(value.normalised), _number(value.multiplier),
                    _number(value.weighted)))
    if result.chosen:
        lines += ['', 'Chosen (%s): %s' % (explain_engine.CHOICE, ', '.join(
            _where(host, node) for host, node in result.chosen))]
        wanted = request['num_instances']
        if len(result.chosen) < wanted:
            lines.append('Only %d of %d instances fit: the request would '
                         'fail (NoValidHost)' % (len(result.chosen), wanted))
    elif result.near_misses:
        count = len(result.near_misses[0].failed)
        lines += ['', 'Nearest misses (failing %d filter%s):' % (
            count, '' if count == 1 else 's')]
        for miss in result.near_misses:
            for name, reason in miss.failed:
                lines.append('  %s: %s: %s' % (_where(miss.host, miss.node),
                                               name, reason))
    return '\n'.join(lines) + '\n'


def _where(host: str, node: str) -> str:
    return host if host == node else '%s (node %s)' % (host, node)


COMMANDS: dict[str, type[command.Command]] = {
    'explain': Explain,
}
