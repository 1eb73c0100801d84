"""How the planning modes' figures are shown: rich tables, JSON, a plot.

``--find-fleet``: one row per policy (the fewest hosts found, over the
lower bound, the refusals there, the runs it took); the plot draws the
refused share of every run against its host count, per policy, with the
lower bound, the allowed share and each policy's answer marked.

``--fill-until-failure``: one column per policy (instances placed
before the first refusal, hosts in use against the lower bound of what
they hold, the refused request, and per resource the trace asks for
what is used, free, free where no size fits and stranded against the
flavor mix, each also as a share of the fleet's capacity x ratio); the
plot draws per resource a stacked bar per policy: used, free where no
size fits, other free, as shares of capacity.

The formatting helpers are ``report``'s.
"""

import numpy as np

from scheduler_tools.replay import report

# Label, unit and divisor of each resource in the tables and the plot
# (MiB shown as GiB); a resource not listed shows under its own name.
RESOURCE_UNITS = {'vcpus': ('vCPUs', 'vCPU', 1.0),
                  'memory_mb': ('RAM GiB', 'GiB', 1024.0),
                  'disk_gb': ('disk GiB', 'GiB disk', 1.0),
                  'gpus': ('GPUs', 'GPU', 1.0)}
FILL_PARTS = (('used', 'C0'), ('free where no size fits', 'C3'),
              ('other free', 'C7'))
# The refused-share axis shows at least this many percent, and room above
# the highest point.
MIN_SHARE_AXIS = 0.1
PLOT_HEADROOM = report.PLOT_HEADROOM

write_json = report.write_json


def _unit(name):
    return RESOURCE_UNITS.get(name, (name, name, 1.0))


def _amount(figures, name, key):
    """``'value (share of capacity)'`` of one resource's figure."""
    divisor = _unit(name)[2]
    one = figures[name]
    return '%s (%s)' % (report._fmt(one[key] / divisor, '{:,.0f}'),
                        report._pct(one[key] / one['capacity']
                                    if one['capacity'] else None))


# ------------------------------------------------------------ find-fleet --

def find_fleet_title(figures):
    return ('Smallest fleet of %s hosts refusing at most %s of %s '
            'instances; lower bound %s hosts' % (
                figures['host_shape'],
                report._count(figures['allowed_refused_instances']),
                report._count(figures['instances']),
                report._count(figures['lower_bound'])))


def find_fleet_caption(figures):
    """Why no fleet passes, when no host of the shape can take some
    instances (more of them than may be refused); else None."""
    too_large = figures.get('unplaceable_instances', 0)
    if too_large <= figures['allowed_refused_instances']:
        return None
    return ('none: %s instances fit no host of %s (a larger shape, or '
            '--max-refused, lets a fleet pass)'
            % (report._count(too_large), figures['host_shape']))


def find_fleet_rows(figures):
    """``[(policy, hosts, over bound, refused, runs, wall s)]`` texts."""
    rows = []
    for policy, found in figures['policies'].items():
        hosts = report._count(found['hosts'])
        if found['hosts'] is None:
            hosts = 'none'
        refused = '-'
        if found['refused_instances'] is not None:
            refused = '%s (%s)' % (report._count(found['refused_instances']),
                                   report._pct(found['refused_share']))
        rows.append((policy, hosts,
                     report._fmt(found['over_bound'], '{:.3f}'), refused,
                     report._count(len(found['runs'])),
                     report._fmt(found['wall_s'])))
    return rows


# ---------------------------------------------------- fill-until-failure --

def fill_title(figures):
    order = 'in trace order' if figures['order'] == 'trace' else (
        'drawn at random (seed %d)' % figures['fill_seed'])
    return ('Filled until the first refusal: %s nodes, requests %s; '
            'shares of capacity x ratio' % (
                report._count(figures['fleet_nodes']), order))


# Rows of each resource the trace asks for: label, figure.
FILL_RESOURCE_ROWS = (('used', 'used'), ('free', 'free'),
                      ('free where no size fits', 'stranded'),
                      ('stranded (flavor mix)', 'mix_stranded'))


def _flavor_text(refused, asked):
    """``'N x size'`` of the refused request, or ``'none'``."""
    if refused is None:
        return 'none'
    return '%d x %s' % (refused['instances'], ' '.join(
        '%s %s' % (report._fmt(refused['flavor'][name] / _unit(name)[2],
                               '{:,.4g}'), _unit(name)[1])
        for name in asked))


def fill_rows(figures):
    """``[(label, text per policy...)]``: the fill's figures, one
    column per policy (see the module docstring)."""
    filled = list(figures['policies'].values())
    asked = figures['asked_resources']
    rows = [
        ('Instances placed',) + tuple(
            report._count(one['instances_placed']) for one in filled),
        ('Requests placed',) + tuple(
            report._count(one['requests_placed']) for one in filled),
        ('Hosts in use / lower bound',) + tuple(
            '%s / %s' % (report._count(one['hosts_in_use']),
                         report._count(one['lower_bound']))
            for one in filled),
        ('First refused request',) + tuple(
            _flavor_text(one['refused'], asked) for one in filled)]
    for name in asked:
        for label, key in FILL_RESOURCE_ROWS:
            rows.append(('%s %s' % (_unit(name)[0], label),)
                        + tuple(_amount(one['resources'], name, key)
                                for one in filled))
    return rows


# ---------------------------------------------------------------- tables --

def render_tables(figures):
    """The rich Tables of a planning mode's figures."""
    if figures['mode'] == 'find-fleet':
        return [report._table(
            find_fleet_title(figures),
            ('Policy', 'Hosts', 'Hosts / bound', 'Refused there', 'Runs',
             'Wall (s)'), find_fleet_rows(figures),
            caption=find_fleet_caption(figures))]
    return [report._table(fill_title(figures),
                          ('Figure',) + tuple(figures['policies']),
                          fill_rows(figures))]


def print_tables(figures, console=None):
    """Print the figures as tables (to stdout by default)."""
    from rich.console import Console

    console = console or Console()
    for table in render_tables(figures):
        console.print(table)


# ------------------------------------------------------------------ plot --

def plot(path, figures):
    """Draw the planning mode's figures into the PNG ``path`` (see the
    module docstring)."""
    import matplotlib

    matplotlib.use('Agg')
    from matplotlib import pyplot

    searched = figures['mode'] == 'find-fleet'
    count = 1 if searched else max(1, len(figures['asked_resources']))
    figure, axes = pyplot.subplots(count, 1, squeeze=False, figsize=(
        9, 5 if searched else 1.5 + 1.6 * count))
    axes = list(axes[:, 0])
    try:
        if searched:
            _draw_search(axes[0], figures)
        else:
            _draw_fill(axes, figures)
        axes[0].set_title(find_fleet_title(figures) if searched
                          else fill_title(figures), fontsize='medium')
        figure.tight_layout()
        figure.savefig(path, dpi=100)
    finally:
        pyplot.close(figure)


def _draw_search(axis, figures):
    from matplotlib import ticker

    for number, (policy, found) in enumerate(figures['policies'].items()):
        runs = sorted(found['runs'], key=lambda run: run['hosts'])
        hosts = [run['hosts'] for run in runs]
        shares = [100.0 * run['refused_share'] for run in runs]
        colour = 'C%d' % number
        axis.plot(hosts, shares, 'o-', color=colour, markersize=4,
                  linewidth=0.8, label=policy)
        if found['hosts'] is not None:
            axis.plot([found['hosts']], [100.0 * found['refused_share']],
                      '*', color=colour, markersize=14)
    axis.axvline(figures['lower_bound'], color='black', linewidth=0.8,
                 linestyle='--', label='lower bound')
    axis.axhline(100.0 * figures['max_refused'], color='grey',
                 linewidth=0.8, linestyle=':', label='allowed refused')
    axis.set_xlabel('hosts of %s (star: smallest passing found)'
                    % figures['host_shape'])
    axis.set_ylabel('instances refused (%)')
    highest = max([100.0 * run['refused_share']
                   for found in figures['policies'].values()
                   for run in found['runs']] +
                  [100.0 * figures['max_refused'], MIN_SHARE_AXIS])
    axis.set_ylim(-0.05 * highest, PLOT_HEADROOM * highest)
    axis.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize='small')


def _draw_fill(axes, figures):
    policies = list(figures['policies'])
    rows = np.arange(len(policies))
    for axis, name in zip(axes, figures['asked_resources'], strict=False):
        parts = np.asarray([_fill_parts(figures['policies'][policy]
                                        ['resources'][name])
                            for policy in policies]).reshape(-1, 3)
        left = np.zeros(len(policies))
        for column, (label, colour) in enumerate(FILL_PARTS):
            axis.barh(rows, parts[:, column], left=left, color=colour,
                      label=label)
            left += parts[:, column]
        axis.set_yticks(rows, policies)
        axis.set_xlim(0, 100)
        axis.set_xlabel('%s: share of capacity x ratio (%%)'
                        % _unit(name)[0])
        axis.grid(True, axis='x', alpha=0.3)
    axes[0].legend(loc='upper left', bbox_to_anchor=(1.0, 1.0),
                   fontsize='small')


def _fill_parts(one):
    """``(used, stranded, other free)`` percent of one resource."""
    whole = one['capacity'] or 1.0
    return (100.0 * one['used'] / whole, 100.0 * one['stranded'] / whole,
            100.0 * (one['free'] - one['stranded']) / whole)
