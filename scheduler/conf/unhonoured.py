"""Options a config file sets that this service does not honour.

``log_unhonoured`` (called once by ``scheduler-service`` at start, in the
parent process, after the preflight checks) re-reads the config files
that oslo.config read (``--config-file`` and the ``*.conf`` files of
``--config-dir``) with oslo.config's own parser (``cfg.ConfigParser``)
and logs one line per option name (the first file that sets it):

* WARNING, ``Unknown option [group] name``: an option of a group this
  service owns (every group of ``scheduler.conf.opts.list_opts`` but
  ``[DEFAULT]``, which the libraries share) that is registered by
  nothing, neither by this service (deprecated names included), nor by a
  plug-in, nor by the keystoneauth plug-in named by the group's
  ``auth_type``.  oslo.config would ignore it silently;
* INFO, ``Option [group] name is accepted and ignored``: a registered
  option that has no effect here (``ignored_now``: ``IGNORED``, and the
  options that the others make ignored, with the reason);
* INFO, ``Option [group] name is Nova's and does not apply``: a Nova
  option of an owned group that a scheduler has no use for
  (``NOVA_ONLY``).

Options given on the command line and ``[DEFAULT]`` are not examined.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any
from typing import NamedTuple

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_log import log as logging

from scheduler.conf import opts as opts_lib

LOG = logging.getLogger(__name__)

Name = tuple[str, str]

_RETRY_WHY = ("oslo.db's retry of database API calls, which only "
              "``use_db_reconnect`` enables; Nova registers neither that "
              "option nor a use of it, so Nova ignores it as well")

# The options this service registers (so that a Nova configuration loads)
# but does not honour, with why.
IGNORED: Mapping[Name, str] = {
    ('api_database', 'db_retry_interval'): _RETRY_WHY,
    ('api_database', 'db_inc_retry_interval'): _RETRY_WHY,
    ('api_database', 'db_max_retry_interval'): _RETRY_WHY,
    ('api_database', 'db_max_retries'): _RETRY_WHY,
    ('api_database', 'asyncio_connection'):
        "oslo.db's asyncio engine: the service reads Nova's databases "
        "through synchronous SQLAlchemy engines on ``connection``",
    ('api_database', 'asyncio_slave_connection'):
        "oslo.db's asyncio engine: the service reads Nova's databases "
        "through synchronous SQLAlchemy engines on ``connection``",
    ('api_database', 'synchronous_reader'):
        'every read of the API and cell databases goes to the engine '
        'of ``connection``, so a reader is always synchronous',
    ('api_database', 'backend'):
        'the only back end is SQLAlchemy (oslo.db has no other)',
}

# Nova options of the groups this service owns that a scheduler never
# uses (not registered here).
NOVA_ONLY: Mapping[Name, str] = {
    ('upgrade_levels', 'compute'):
        "the version cap of Nova's compute RPC API; the scheduler calls "
        'no compute service',
    ('upgrade_levels', 'conductor'):
        "the version cap of Nova's conductor RPC API; the scheduler "
        'calls no conductor',
    ('upgrade_levels', 'baseapi'):
        "the version cap of Nova's base RPC API, which the scheduler "
        'does not serve',
}


class Unhonoured(NamedTuple):
    """One option a config file sets and this service does not honour."""

    group: str
    name: str
    path: str
    kind: str           # 'unknown', 'ignored' or 'nova-only'
    why: str


def config_files(conf: cfg.ConfigOpts) -> list[str]:
    """The files oslo.config read: ``--config-file`` in order, then the
    ``*.conf`` files of each ``--config-dir``, sorted (as oslo.config)."""
    files = list(conf.config_file or [])
    for directory in conf.config_dir or []:
        files.extend(sorted(glob.glob(os.path.join(directory, '*.conf'))))
    return files


def file_options(paths: Iterable[str]) -> list[tuple[str, str, str]]:
    """``(group, name, path)`` of each option the files set, the first
    file per ``(group, name)``; ``-`` in names read as ``_``.  A file
    that cannot be read is skipped (oslo.config reported it already)."""
    seen: dict[Name, str] = {}
    for path in paths:
        sections: dict[str, dict[str, list[str]]] = {}
        try:
            cfg.ConfigParser(path, sections).parse()
        except (OSError, cfg.ParseError):
            continue
        for group, values in sections.items():
            for name in values:
                seen.setdefault((group, name.replace('-', '_')), path)
    return [(group, name, path) for (group, name), path in seen.items()]


def _add_names(known: dict[str, set[str]], group: str, opt: Any) -> None:
    known.setdefault(group, set()).update(
        {opt.dest, opt.name.replace('-', '_')})
    for old in opt.deprecated_opts or []:
        old_group = old.group or group
        if old.name:
            known.setdefault(old_group, set()).add(
                old.name.replace('-', '_'))


def _auth_plugin_names(conf: cfg.ConfigOpts, group: str) -> set[str]:
    """The option names of the keystoneauth plug-in that ``[group]
    auth_type`` names (registered only when the plug-in loads)."""
    try:
        auth_type = conf[group].auth_type
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError, AttributeError):
        return set()
    if not auth_type:
        return set()
    try:
        plugin = ks_loading.get_auth_plugin_conf_options(auth_type)
    except Exception:  # noqa: BLE001 - unknown plug-in: nothing known
        return set()
    return {opt.dest for opt in plugin}


def known_options(conf: cfg.ConfigOpts) -> dict[str, set[str]]:
    """``{group: option names}`` of the owned groups: this service's
    options with their deprecated names, what else is registered in
    those groups now (plug-ins, keystoneauth) and the options of each
    group's keystoneauth plug-in."""
    known: dict[str, set[str]] = {}
    for group, group_opts in opts_lib.list_opts():
        name = group if isinstance(group, str) else group.name
        for opt in group_opts:
            _add_names(known, name, opt)
    known.pop('DEFAULT', None)
    for name in known:
        known[name].update(_registered(conf, name))
        known[name].update(_auth_plugin_names(conf, name))
    return known


def _registered(conf: cfg.ConfigOpts, group: str) -> set[str]:
    try:
        return set(conf[group])
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError, KeyError):
        return set()


# Options honoured in Placement mode only (``[scheduler]
# use_placement``): Nova's request filters and PCI in Placement change the
# allocation candidates query, which only that mode computes.
PLACEMENT_ONLY: tuple[Name, ...] = (
    ('scheduler', 'limit_tenants_to_placement_aggregate'),
    ('scheduler', 'placement_aggregate_required_for_tenants'),
    ('scheduler', 'query_placement_for_image_type_support'),
    ('scheduler', 'enable_isolated_aggregate_filtering'),
    ('scheduler', 'image_metadata_prefilter'),
    ('scheduler', 'query_placement_for_routed_network_aggregates'),
    ('scheduler', 'max_placement_results'),
    ('filter_scheduler', 'pci_in_placement'),
)


def ignored_now(conf: cfg.ConfigOpts) -> dict[Name, str]:
    """``IGNORED``, plus what the other options of ``conf`` make
    ignored: the ``PLACEMENT_ONLY`` options outside Placement mode, and
    ``max_placement_results`` without ``[placement]
    apply_max_placement_results``."""
    ignored = dict(IGNORED)
    if not conf.scheduler.use_placement:
        ignored.update(dict.fromkeys(
            PLACEMENT_ONLY, 'honoured in Placement mode only '
            '([scheduler] use_placement), which is off'))
    elif not conf.placement.apply_max_placement_results:
        ignored[('scheduler', 'max_placement_results')] = (
            'every compute node is considered; set [placement] '
            "apply_max_placement_results for Nova's limit")
    return ignored


def unhonoured(conf: cfg.ConfigOpts) -> list[Unhonoured]:
    """What the config files of ``conf`` set that this service does not
    honour, in file order (see the module)."""
    known = known_options(conf)
    ignored = ignored_now(conf)
    found = []
    for group, name, path in file_options(config_files(conf)):
        if group not in known:
            continue
        key = (group, name)
        if key in NOVA_ONLY:
            found.append(Unhonoured(group, name, path, 'nova-only',
                                    NOVA_ONLY[key]))
        elif name not in known[group]:
            found.append(Unhonoured(group, name, path, 'unknown',
                                    'not an option of this service'))
        elif key in ignored:
            found.append(Unhonoured(group, name, path, 'ignored',
                                    ignored[key]))
    return found


def log_unhonoured(conf: cfg.ConfigOpts) -> list[Unhonoured]:
    """Log one line per unhonoured option (see the module) and return
    them.  Never raises: a failure to re-read is logged at WARNING."""
    try:
        found = unhonoured(conf)
    except Exception as exc:  # noqa: BLE001 - a log aid must not stop
        LOG.warning('Could not check the config files for unhonoured '
                    'options: %s', exc)
        return []
    for item in found:
        if item.kind == 'unknown':
            LOG.warning('Unknown option [%s] %s in %s: %s; it is ignored',
                        item.group, item.name, item.path, item.why)
        elif item.kind == 'ignored':
            LOG.info('Option [%s] %s (in %s) is accepted and ignored: %s',
                     item.group, item.name, item.path, item.why)
        else:
            LOG.info('Option [%s] %s (in %s) is Nova\'s and does not '
                     'apply to the scheduler: %s', item.group, item.name,
                     item.path, item.why)
    return found
