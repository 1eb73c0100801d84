"""``[prometheus]``: the service's Prometheus endpoint (our own group).

``bind`` names the address on which the service's parent process serves
``/metrics``, and ``/healthz`` and ``/readyz`` beside it
(``scheduler.observability``); empty, the default, records and serves
nothing.
"""

from oslo_config import cfg

from scheduler.conf import groups

prometheus_group = cfg.OptGroup(
    name='prometheus', title='Prometheus endpoint',
    help='The metrics of the service\'s decisions and host view, served '
         'for Prometheus by the parent process over every worker (our '
         'own group, see docs/metrics.rst).')

prometheus_opts = [
    cfg.StrOpt('bind', default='',
               help='``HOST:PORT`` on which to serve ``/metrics`` (an IPv6 '
                    'host in brackets: ``[::1]:9180``), e.g. '
                    '``127.0.0.1:9180``, with the liveness (``/healthz``) and'
                    ' readiness (``/readyz``) checks beside it; any other '
                    'path answers 404.  Empty (the default): no metrics are '
                    'recorded nor served, and no check.  A value that is not '
                    'HOST:PORT, or an address that cannot be listened on (a '
                    'port in use), stops the service at start.  The workers '
                    'write their metrics to the directory named by the '
                    '``PROMETHEUS_MULTIPROC_DIR`` environment variable when '
                    'it is set (its ``*.db`` files are removed at start: give'
                    ' each service its own), else to a private temporary '
                    'directory removed at exit.'),
]


def register_opts(conf):
    groups.register_group(conf, prometheus_group)
    conf.register_opts(prometheus_opts, group=prometheus_group)


def list_opts():
    return {prometheus_group: prometheus_opts}
