"""IsolatedHostsFilter: the isolation matrix of images and hosts."""

import itertools

import fakes
import pytest

from scheduler.filters import isolated_hosts_filter

ISOLATED_IMAGE = '11111111-1111-1111-1111-111111111111'
OTHER_IMAGE = '22222222-2222-2222-2222-222222222222'


def _passes(conf, image_id=ISOLATED_IMAGE, host='isolated',
            images=(ISOLATED_IMAGE,), hosts=('isolated',), restrict=True):
    group = 'filter_scheduler'
    conf.set_override('isolated_images', list(images), group)
    conf.set_override('isolated_hosts', list(hosts), group)
    conf.set_override('restrict_isolated_hosts_to_isolated_images',
                      restrict, group)
    spec = fakes.fake_spec()
    if image_id is not None:
        spec.image = fakes.fake_image()
        spec.image.id = image_id
    return isolated_hosts_filter.IsolatedHostsFilter().host_passes(
        fakes.fake_host_state(host=host), spec)


def test_isolated_hosts_fails_isolated_on_non_isolated(conf):
    assert not _passes(conf, ISOLATED_IMAGE, 'free')


def test_isolated_hosts_fails_non_isolated_on_isolated(conf):
    assert not _passes(conf, OTHER_IMAGE, 'isolated')


def test_isolated_hosts_passes_isolated_on_isolated(conf):
    assert _passes(conf, ISOLATED_IMAGE, 'isolated')


def test_isolated_hosts_passes_non_isolated_on_non_isolated(conf):
    assert _passes(conf, OTHER_IMAGE, 'free')


def test_isolated_hosts_no_config(conf):
    assert _passes(conf, OTHER_IMAGE, 'free', images=(), hosts=())
    assert _passes(conf, ISOLATED_IMAGE, 'isolated', images=(), hosts=())


def test_isolated_hosts_no_hosts_config(conf):
    # An isolated image has no host to go to.
    assert not _passes(conf, ISOLATED_IMAGE, 'free', hosts=())
    assert _passes(conf, OTHER_IMAGE, 'free', hosts=())


def test_isolated_hosts_no_images_config(conf):
    # Isolated hosts then take no image at all, unless not restricted.
    assert not _passes(conf, OTHER_IMAGE, 'isolated', images=())
    assert _passes(conf, OTHER_IMAGE, 'free', images=())
    assert _passes(conf, OTHER_IMAGE, 'isolated', images=(),
                   restrict=False)


def test_isolated_hosts_less_restrictive(conf):
    # Non-isolated images may use isolated hosts; isolated images still
    # may not leave them.
    assert _passes(conf, OTHER_IMAGE, 'isolated', restrict=False)
    assert _passes(conf, OTHER_IMAGE, 'free', restrict=False)
    assert _passes(conf, ISOLATED_IMAGE, 'isolated', restrict=False)
    assert not _passes(conf, ISOLATED_IMAGE, 'free', restrict=False)


@pytest.mark.parametrize('restrict', [True, False])
def test_isolated_hosts_without_image_is_not_isolated(conf, restrict):
    # Boot from volume: no image, hence no image id.
    assert _passes(conf, None, 'free', restrict=restrict)
    assert _passes(conf, None, 'isolated', restrict=restrict) == (
        not restrict)


def test_isolated_hosts_image_without_id(conf):
    conf.set_override('isolated_images', [ISOLATED_IMAGE],
                      'filter_scheduler')
    spec = fakes.fake_spec(image=fakes.fake_image())
    del spec.image.id
    assert isolated_hosts_filter.IsolatedHostsFilter().host_passes(
        fakes.fake_host_state(host='free'), spec)


@pytest.mark.parametrize('image_isolated,host_isolated,restrict',
                         list(itertools.product([True, False], repeat=3)))
def test_isolation_matrix(conf, image_isolated, host_isolated, restrict):
    image_id = ISOLATED_IMAGE if image_isolated else OTHER_IMAGE
    host = 'isolated' if host_isolated else 'free'
    expected = (image_isolated == host_isolated if restrict
                else host_isolated or not image_isolated)
    assert _passes(conf, image_id, host, restrict=restrict) == expected


def test_isolated_hosts_flags():
    cls = isolated_hosts_filter.IsolatedHostsFilter
    assert cls.run_filter_once_per_request
    assert cls.RUN_ON_REBUILD


def test_isolated_hosts_runs_on_rebuild(conf):
    conf.set_override('isolated_hosts', ['isolated'], 'filter_scheduler')
    spec = fakes.fake_spec(scheduler_hints={'_nova_check_type': 'rebuild'})
    host_filter = isolated_hosts_filter.IsolatedHostsFilter()
    hosts = [fakes.fake_host_state(host='isolated'),
             fakes.fake_host_state(host='free')]
    assert [h.host for h in host_filter.filter_all(hosts, spec)] == ['free']
