"""The service's oslo.messaging defaults: Nova's exchange, bounded
prefetch, and a configuration file still decides."""

from oslo_config import cfg

from scheduler import rpc


def test_prefetch_is_bounded_by_default():
    conf = cfg.ConfigOpts()
    rpc.set_defaults(conf)
    conf([])
    assert (conf.oslo_messaging_rabbit.rabbit_qos_prefetch_count ==
            rpc.PREFETCH_COUNT > 0)


def test_a_configuration_file_sets_the_prefetch(tmp_path):
    path = tmp_path / 'scheduler.conf'
    path.write_text('[oslo_messaging_rabbit]\nrabbit_qos_prefetch_count = 0\n')
    conf = cfg.ConfigOpts()
    rpc.set_defaults(conf)
    conf(['--config-file', str(path)])
    assert conf.oslo_messaging_rabbit.rabbit_qos_prefetch_count == 0
