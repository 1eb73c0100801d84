"""``scheduler-bench --mode versus-nova`` without servers: its options
(own defaults, smoke), the capacity checks (Placement's rule, and the
SQL mode's on the instances placed), the phase rows, the ratios, the
agreement, the table (within its width) and the plot."""

import io

import pytest
from oslo_config import cfg
from rich.console import Console

from scheduler_tools.bench import BenchError
from scheduler_tools.bench import versus_nova
from scheduler_tools.bench import versus_nova_contestants as contestants
from scheduler_tools.bench import versus_nova_fleet as fleet
from scheduler_tools.bench import versus_nova_report as vreport
from scheduler_tools.bench import versus_nova_venv
from scheduler_tools.bench import workload
from scheduler_tools.cmd import bench as bench_cmd


def _settings(*args):
    conf = cfg.ConfigOpts()
    bench_cmd.register_opts(conf)
    conf(list(args), project='scheduler-bench-test')
    return bench_cmd.settings_from(conf), conf


def test_the_mode_has_its_own_defaults_and_smoke():
    settings, conf = _settings('--mode', 'versus-nova')
    assert settings.modes == ('versus-nova',)
    assert settings.hosts == [1000, 10000]
    assert settings.callers == [1, 8, 32]
    assert settings.instances == [1, 10]
    assert settings.time_budget_s == 60.0
    assert conf.bench_nova_venv == versus_nova_venv.default_venv()
    settings, _ = _settings('--mode', 'versus-nova', '--callers', '4',
                            '--time-budget', '5')
    assert settings.callers == [4] and settings.time_budget_s == 5.0
    settings, _ = _settings('--mode', 'versus-nova', '--smoke')
    assert settings.hosts == [20] and settings.callers == [1, 2]


def test_missing_servers_are_named():
    settings, _ = _settings('--mode', 'versus-nova')
    servers = versus_nova.Servers(None, None, 'http://p', None, '/venv')
    with pytest.raises(BenchError, match='--transport-url, '
                       '--nova-database-server, --placement-database'):
        versus_nova.run(settings, servers, lambda row: None)


def test_overcommit_is_placements_rule():
    rows = [('a', 'VCPU', 64, 16, 0, 4.0),            # 64 <= 64
            ('a', 'MEMORY_MB', 15000, 16384, 512, 1.0),  # <= 15872
            ('b', 'VCPU', 65, 16, 0, 4.0),            # over 64
            ('b', 'MEMORY_MB', 15873, 16384, 512, 1.0)]  # over 15872
    assert vreport.overcommitted(rows) == [
        ('b', 'VCPU', 65, 64.0), ('b', 'MEMORY_MB', 15873, 15872.0)]


def test_sql_mode_check_adds_the_instances_placed_to_the_seeded_usage():
    [node] = fleet.nodes_of(workload.generate_hosts(1))
    room = int(node.vcpus * node.cpu_ratio) - node.vcpus_used
    fits = [[node.uuid, 'i-%d' % n, 1, 1, 1] for n in range(room)]
    assert vreport.overcommitted(vreport.node_usage_rows([node], fits)) == []
    over = fits + [[node.uuid, 'one-more', 1, 1, 1]]
    [(uuid, rc, used, capacity)] = vreport.overcommitted(
        vreport.node_usage_rows([node], over))
    assert (uuid, rc, used) == (node.uuid, 'VCPU', node.vcpus_used +
                                room + 1)
    assert capacity == node.vcpus * node.cpu_ratio


def _tally(answered, placed, seconds, latencies, **extra):
    tally = {'calls': answered, 'answered': answered, 'novalidhost': 0,
             'errors': 0, 'placed': placed, 'first_error': None,
             'latencies_ms': latencies, 'consumers': [],
             'unfinished': 0, 'elapsed_s': seconds}
    tally.update(extra)
    return tally


def _checks(held=None, expected=None, over=(), missing=0,
            unexplained=0):
    return {'overcommitted': list(over), 'allocations_held': held,
            'allocations_expected': expected,
            'allocations_missing': missing,
            'allocations_unexplained': unexplained}


def test_phase_row_rates_and_verdict():
    row = vreport.phase_row('nova', 1000, 8, 10, _tally(
        10, 100, 20.0, [100.0] * 9 + [1000.0]), _checks(100, 100))
    assert row['decisions_per_s'] == 0.5 and row['instances_per_s'] == 5.0
    assert row['p50_ms'] == 100.0 and 100.0 < row['p99_ms'] <= 1000.0
    assert row['verified'] and not row['no_decision']
    # An allocation that no instance placed and no failed call holds,
    # or an instance placed without one: not verified.
    assert not vreport.phase_row('nova', 1000, 8, 10, _tally(
        10, 100, 20.0, [1.0]), _checks(101, 100, unexplained=1))['verified']
    assert not vreport.phase_row('nova', 1000, 8, 10, _tally(
        10, 100, 20.0, [1.0]), _checks(99, 100, missing=1))['verified']
    # The claim of a call that timed out at the client is explained.
    assert vreport.phase_row('nova', 1000, 32, 1, _tally(
        10, 10, 20.0, [1.0], errors=1), _checks(11, 10))['verified']
    assert not vreport.phase_row('ours-sql', 1000, 8, 1, _tally(
        1, 1, 1.0, [1.0]), _checks(over=[('a', 'VCPU', 2, 1.0)]))['verified']
    # A phase without an answer says so, and has no percentile.
    empty = vreport.phase_row('nova', 10000, 32, 1, _tally(
        0, 0, 20.0, [], calls=32, errors=0), _checks(0, 0))
    assert empty['no_decision'] and empty['p99_ms'] is None
    assert empty['unanswered'] == 32 and empty['decisions_per_s'] == 0.0


def _rows():
    rows = []
    for name, rate, p99 in (('nova', 0.5, 20000.0),
                            ('ours-placement', 60.0, 200.0),
                            ('ours-sql', 120.0, 50.0)):
        row = vreport.phase_row(name, 10000, 8, 1, _tally(
            int(rate * 10), int(rate * 10), 10.0, [p99]), _checks(0, 0))
        rows.append(row)
    return rows


def test_ratios_compare_ours_with_nova_and_placement_with_sql():
    [ratio] = vreport.ratio_rows(_rows())
    assert (ratio['hosts'], ratio['callers'], ratio['instances']) == (
        10000, 8, 1)
    assert ratio['placement_vs_nova_decisions'] == 120.0
    assert ratio['nova_p99_over_placement_p99'] == 100.0
    assert ratio['sql_vs_nova_decisions'] == 240.0
    assert ratio['nova_p99_over_sql_p99'] == 400.0
    assert ratio['placement_vs_sql_decisions'] == 0.5
    assert not ratio['nova_bound']
    # Nova made no decision in its 10 s phase: fewer than 0.1/s, a p99
    # over the call time-out; the ratios are lower bounds.
    rows = _rows()
    rows[0].update(decisions_per_s=0.0, p99_ms=None, no_decision=True,
                   call_timeout_s=60)
    [ratio] = vreport.ratio_rows(rows)
    assert ratio['nova_bound']
    assert ratio['placement_vs_nova_decisions'] == pytest.approx(600.0)
    assert ratio['nova_p99_over_placement_p99'] == pytest.approx(300.0)
    out = io.StringIO()
    vreport.print_table(rows + [ratio],
                        Console(file=out, width=vreport.TABLE_WIDTH))
    assert '>600x' in out.getvalue()
    # Without a Nova row: no ratio against it.
    [ratio] = vreport.ratio_rows(rows[1:])
    assert ratio['placement_vs_nova_decisions'] is None
    assert ratio['placement_vs_sql_decisions'] == 0.5


def test_agreement_counts_the_same_hosts_of_the_requests_compared():
    pairs = [{'nova': ['a'], 'ours': ['a']}, {'nova': ['a'], 'ours': ['b']},
             {'nova': [], 'ours': []}, {'nova': None, 'ours': ['a']}]
    row = vreport.agreement_row(1000, 1, pairs)
    assert (row['requests'], row['compared'], row['same_hosts'],
            row['both_no_valid_host']) == (4, 3, 2, 1)
    assert row['agreement'] == pytest.approx(2 / 3)


def test_table_fits_and_names_every_contestant():
    rows = _rows()
    rows += vreport.ratio_rows(rows)
    rows.append(vreport.agreement_row(10000, 1, [{'nova': ['a'],
                                                  'ours': ['a']}]))
    out = io.StringIO()
    vreport.print_table(rows, Console(file=out, width=vreport.TABLE_WIDTH))
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= \
        vreport.TABLE_WIDTH
    for name in ('nova', 'ours-placement', 'ours-sql', '120x', '0.5x',
                 'the same hosts for 1 of 1'):
        assert name in text


def test_plot_is_written(tmp_path):
    path = tmp_path / 'versus.png'
    vreport.plot(_rows(), str(path))
    assert path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_providers_carry_owner_nova_and_no_custom_trait():
    hosts = workload.generate_hosts(50)
    providers = fleet.providers_of(hosts)
    assert all(fleet.OWNER_TRAIT in p.traits and 'COMPUTE_NODE' in p.traits
               and not any(t.startswith('CUSTOM_') for t in p.traits)
               and not p.aggregates for p in providers)
    [disabled] = [p for p, h in zip(providers, hosts, strict=True)
                  if h.disabled][:1]
    assert 'COMPUTE_STATUS_DISABLED' in disabled.traits


def test_nova_conf_keeps_novas_defaults(tmp_path):
    urls = {'api': 'postgresql://api', 'cell0': 'postgresql://c0',
            'cell1': 'postgresql://c1'}
    path = contestants.nova_conf(str(tmp_path / 'nova.conf'), '/w', urls,
                                 'rabbit://r/', 'http://p')
    parser = cfg.ConfigParser(path, {})
    parser.parse()
    assert sorted(parser.sections) == [
        'DEFAULT', 'api_database', 'database', 'oslo_concurrency',
        'placement']
    assert parser.sections['placement']['endpoint'] == ['http://p']
    assert parser.sections['database']['connection'] == ['postgresql://c0']


def test_service_configs():
    urls = {'api': 'postgresql://api', 'cell0': 'postgresql://c0',
            'cell1': 'postgresql://c1'}
    text = contestants.ours_conf('ours-placement', 'postgresql://own', urls,
                                 'rabbit://r/', 'http://p', 'postgresql://pd',
                                 '/tmp/log')
    assert 'use_placement = true' in text and 'postgresql://pd' in text
    assert 'connection = postgresql://api' in text
    sql = contestants.ours_conf('ours-sql', 'postgresql://own', urls,
                                'rabbit://r/', 'http://p', 'postgresql://pd',
                                '/tmp/log')
    assert 'use_placement' not in sql and 'placement_database' not in sql
