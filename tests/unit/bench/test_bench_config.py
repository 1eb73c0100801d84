"""What ``scheduler-bench`` hands the schedulers it measures: the same
settings in both modes, and a warm-up that meets every request shape;
and the servers its end-to-end and load modes need: the ones given."""

import pytest
from oslo_config import cfg

from scheduler.conf import CONF
from scheduler_tools import bench
from scheduler_tools.bench import workload
from scheduler_tools.cmd import bench as bench_cmd


def test_service_gets_the_options_given_to_the_benchmark(conf):
    conf.set_override('host_state_max_age', 0.25, 'scheduler')
    conf.set_override('enabled_filters', ['RamFilter'], 'filter_scheduler')
    lines = bench.scheduler_config_lines(CONF)
    assert 'host_state_max_age = 0.25' in lines['scheduler']
    # The benchmark's own filters win over the ones given.
    assert lines['filter_scheduler'].count(
        'enabled_filters = ' + ','.join(bench.BENCH_FILTERS)) == 1
    assert 'enabled_filters = RamFilter' not in lines['filter_scheduler']


def test_defaults_are_not_written():
    lines = bench.scheduler_config_lines(CONF)
    assert not any(line.startswith('host_state_max_age')
                   for line in lines['scheduler'])
    assert bench.scheduler_config_lines() == bench.scheduler_config_lines(
        CONF)


def test_warm_up_meets_every_shape_of_the_mix():
    hosts = workload.generate_hosts(20, 0)
    requests = workload.Workload(hosts, 0).warmup_requests(3)
    specs = [r.spec for r in requests]
    assert {r.kind for r in requests} == {kind for _, kind in
                                          workload.KINDS}
    assert {s.availability_zone for s in specs} >= set(
        workload.REQUEST_ZONES)
    assert [dict(s.flavor.extra_specs) for s in specs
            if s.flavor.extra_specs] == [dict(e) for e in
                                         workload.EXTRA_SPECS]
    assert len(requests) == (len(workload.REQUEST_ZONES) +
                             len(workload.EXTRA_SPECS) +
                             len(workload.IMAGE_PROPERTIES) + 3 + 3)


def _settings(*args):
    conf = cfg.ConfigOpts()
    bench_cmd.register_opts(conf)
    conf(list(args), project='scheduler-bench-test')
    return bench_cmd.settings_from(conf)


def test_end_to_end_runs_on_the_servers_given(capsys):
    urls = ('--transport-url', 'rabbit://u:p@127.0.0.1:5672/',
            '--database-connection', 'postgresql+psycopg2://u@h/db')
    assert bench_cmd._servers_given(_settings(*urls))
    # --mode all measures in-process and skips end-to-end without them.
    assert not bench_cmd._servers_given(_settings())
    assert 'end-to-end skipped' in capsys.readouterr().err
    for mode in ('endtoend', 'load'):
        with pytest.raises(bench.BenchError, match='--database-connection'):
            bench_cmd._servers_given(_settings('--mode', mode, *urls[:2]))
