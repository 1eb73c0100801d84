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

The output follows openstackclient's conventions (cliff's ``ShowOne``):
``-f table`` (the default) prints the explanation above as text; ``-f
json|yaml|value|shell`` and ``-c FIELD`` (repeatable) give the fields of
``Explanation.to_dict()`` (``request``, ``steps``, ``summary``,
``chosen``...), their lists and dicts as themselves in JSON and YAML
and as JSON text in a table or ``value`` output; ``-f table -c FIELD``
is a Field/Value table of those fields.

Exit status: 0 when the request would be placed (every instance),
``manage_common.NO_VALID_HOST`` (3) when it would fail with NoValidHost,
whatever the format; 1 when it cannot be read or explained.  Its
warnings (a host down...) go to ``[DEFAULT] log_file`` alone when set.

The engine, the objects and Placement are imported when the command
runs, not when ``scheduler-manage`` starts.
"""

from __future__ import annotations

import json
import typing

from cliff import columns
from cliff import command
from cliff import show

from scheduler.cmd import manage_common
from scheduler.conf import CONF

if typing.TYPE_CHECKING:
    from scheduler.engine import explain as explain_engine

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
    from oslo_utils import uuidutils

    from scheduler.objects import flavor as flavor_obj
    from scheduler.objects import image_meta as image_meta_obj
    from scheduler.objects import request_spec as request_spec_obj

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


def add_request_arguments(parser: typing.Any) -> None:
    """The flags of a request (``spec_from_flags``'s): flavor sizes,
    extra specs, image properties, hints, zone, instances, project."""
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


def spec_from_file(context: typing.Any, path: str) -> typing.Any:
    """The RequestSpec of a primitive (JSON) in ``path``.

    :raises scheduler.exception.InvalidObjectPrimitive: not one.
    """
    from scheduler import objects
    from scheduler.objects import base as objects_base

    with open(path, encoding='utf-8') as stream:
        primitive = json.load(stream)
    objects.register_all()
    return objects_base.ObjectSerializer().deserialize_entity(context,
                                                              primitive)


def checked(spec_obj: typing.Any) -> typing.Any:
    """``spec_obj`` checked as the service checks a request."""
    from scheduler.server import manager

    return manager.SchedulerManager.checked_spec(spec_obj, None)


def failures() -> tuple[type[Exception], ...]:
    """What ends ``explain`` with one line and status 1: a request that
    cannot be read or checked, an explanation that cannot be made."""
    from scheduler import exception

    return (OSError, ValueError, exception.SchedulerException)


def fits(result: explain_engine.Explanation) -> bool:
    """Whether every instance of the request got a host (else the
    service would answer NoValidHost)."""
    return len(result.chosen) >= result.request['num_instances']


class Structured(columns.FormattableColumn):
    """A list or dict of the explanation: itself in JSON and YAML, JSON
    text (sorted keys) in a table or ``value`` output."""

    def human_readable(self) -> str:
        return json.dumps(self._value, sort_keys=True)


def fields(result: explain_engine.Explanation
           ) -> tuple[tuple[str, ...], tuple[typing.Any, ...]]:
    """A ShowOne's ``(names, values)`` of ``result.to_dict()``, by name;
    lists and dicts as ``Structured``."""
    data = result.to_dict()
    names = tuple(sorted(data))
    return names, tuple(
        Structured(data[name]) if isinstance(data[name], (list, dict))
        else data[name] for name in names)


class Explain(manage_common.DatabaseCommand, show.ShowOne):
    """Explain where a request would go, or why nowhere."""

    # The explanation of the last take_action, for the text output.
    result: explain_engine.Explanation | None = None

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
        '(Placement\'s database is read; its API is not asked).  Exit '
        'status: 0 when the request would be placed, 3 when it would fail '
        '(NoValidHost), 1 when it cannot be read or explained.')

    def get_description(self) -> str:
        return '%s\n\n%s' % (super().get_description(), self.details)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--spec', metavar='FILE',
                            help='a RequestSpec primitive (JSON) as a caller '
                            'sends it; excludes the request flags')
        add_request_arguments(parser)
        self._parser = parser
        return parser

    def run(self, parsed_args) -> int:
        """0 when the request would be placed, ``NO_VALID_HOST`` (3) when
        it would fail, 1 when it cannot be read or explained."""
        try:
            status = super().run(parsed_args)
        except failures() as exc:
            return self.refuse(str(exc))
        if status == 0 and self.result is not None and not fits(self.result):
            return manage_common.NO_VALID_HOST
        return status

    def take_action(self, parsed_args):
        from scheduler import context as scheduler_context

        context = scheduler_context.get_admin_context()
        spec_obj = checked(self._spec(context, parsed_args))
        self.result = _explain(context, spec_obj)
        return fields(self.result)

    def produce_output(self, parsed_args, column_names, data) -> int:
        """The text of ``render`` for ``-f table`` without ``-c``; else
        cliff's formatter over the fields (``csv`` and ``value`` print
        the structured ones as their JSON text)."""
        if parsed_args.formatter == 'table' and not parsed_args.columns:
            assert self.result is not None
            self.app.stdout.write(render(self.result))
            return 0
        if parsed_args.formatter in manage_common.TEXT_FORMATS:
            data = tuple(manage_common.text(value) for value in data)
        return super().produce_output(parsed_args, column_names, data)

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
    from scheduler.drivers import base as drivers_base
    from scheduler.engine import explain as explain_engine
    from scheduler.placement import refusals
    from scheduler.placement import source as placement_source

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
    from scheduler.engine import explain as explain_engine

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
