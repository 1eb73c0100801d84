"""ImagePropertiesWeigher in Nova database mode: the image properties of
the instances read through the reader the host view lends the
HostStates, once for all the hosts weighed, only when the weigher can
change the order."""

import datetime
import itertools
import uuid

import fakes
import numpy as np
import pytest

from scheduler import weights
from scheduler.objects import instance as instance_obj
from scheduler.view import host_manager
from scheduler.view.host_table import HostTable
from scheduler.weights import image_props

LINUX_Q35 = {'os_distro': 'linux', 'hw_machine_type': 'q35'}
_IDS = itertools.count(1)


class FakeReader:
    """``ImagePropsReader``'s contract: ``lookup`` of ``(cell uuid,
    instance uuid, stamp)`` triples; ``stored``: ``{uuid: props}``,
    instances of ``down`` cells left out.  ``calls``: the ``wanted`` of
    each lookup; ``cached`` returns what lookups found (``peeks``
    counts its calls)."""

    def __init__(self, stored):
        self.stored = stored
        self.down = set()
        self.epoch = 0
        self.calls = []
        self.known = {}       # what lookups returned
        self.peeks = 0

    def lookup(self, wanted):
        wanted = list(wanted)
        self.calls.append(wanted)
        found = {uuid: self.stored.get(uuid, {})
                 for cell, uuid, _stamp in wanted if cell not in self.down}
        self.known.update(found)
        return found

    def cached(self, uuids):
        self.peeks += 1
        return {uuid: self.known[uuid] for uuid in uuids
                if uuid in self.known}


def _instance(**fields):
    """An instance as read from a cell (it has an ``id``)."""
    fields.setdefault('id', next(_IDS))
    return instance_obj.Instance(uuid=str(uuid.uuid4()), **fields)


def _host(i, reader, *instances, cell='cell-a'):
    state = fakes.fake_host_state(
        host='host%d' % i, node='node%d' % i,
        instances={inst.uuid: inst for inst in instances})
    state.cell_uuid = cell
    setattr(state, host_manager.IMAGE_PROPS_ATTRIBUTE, reader)
    return state


def _fleet(reader):
    """host1: an x86_64 instance of no stored image; host2: one Linux
    q35 instance; host3: two, in another cell."""
    linux = [_instance(), _instance(), _instance()]
    for inst in linux:
        reader.stored[inst.uuid] = dict(LINUX_Q35, base_image_ref='img')
    return [_host(1, reader, _instance(architecture='x86_64')),
            _host(2, reader, linux[0]),
            _host(3, reader, linux[1], linux[2], cell='cell-b')]


def _rows(hosts, spec):
    table = HostTable(hosts)
    weigher = image_props.ImagePropertiesWeigher()
    return weigher.weigh_rows(table, np.arange(len(hosts)), spec).tolist()


def _objects(hosts, spec):
    weigher = image_props.ImagePropertiesWeigher()
    return weigher.weigh_objects(
        [weights.WeighedHost(h, 0.0) for h in hosts], spec)


@pytest.fixture
def multiplier(conf):
    conf.set_override('image_props_weight_multiplier', 1.0,
                      'filter_scheduler')


@pytest.mark.parametrize('weigh', [_rows, _objects])
def test_stored_properties_counted_in_one_lookup(multiplier, weigh):
    reader = FakeReader({})
    hosts = _fleet(reader)
    spec = fakes.fake_spec(image_props=LINUX_Q35)
    assert weigh(hosts, spec) == [0.0, 2.0, 4.0]
    assert len(reader.calls) == 1
    # Each instance asked in its host's cell.
    assert sorted(cell for cell, _uuid, _stamp in reader.calls[0]) == [
        'cell-a', 'cell-a', 'cell-b', 'cell-b']


def test_stored_properties_replace_the_instance_columns(multiplier):
    reader = FakeReader({})
    hosts = _fleet(reader)
    # host1's instance has architecture x86_64 in its row, but its stored
    # image (none found) has no property: Nova counts nothing.
    spec = fakes.fake_spec(image_props={'hw_architecture': 'x86_64'})
    assert _rows(hosts, spec) == [0.0, 0.0, 0.0]


def test_a_cell_that_did_not_answer_falls_back_to_the_columns(multiplier):
    reader = FakeReader({})
    hosts = _fleet(reader)
    reader.down.add('cell-a')
    spec = fakes.fake_spec(image_props=dict(LINUX_Q35,
                                            hw_architecture='x86_64'))
    assert _rows(hosts, spec) == [1.0, 0.0, 4.0]


def test_the_stamp_is_updated_at_and_image_ref(multiplier):
    reader = FakeReader({})
    at = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    inst = _instance(updated_at=at, image_ref='img')
    _objects([_host(1, reader, inst)], fakes.fake_spec(image_props=LINUX_Q35))
    assert reader.calls == [[('cell-a', inst.uuid, (at.replace(tzinfo=None),
                                                     'img'))]]


def test_nothing_read_when_the_weigher_cannot_count(conf):
    reader = FakeReader({})
    hosts = _fleet(reader)
    spec = fakes.fake_spec(image_props=LINUX_Q35)
    # Multiplier 0 (the default): the columns only, no read.
    assert _rows(hosts, spec) == [0.0, 0.0, 0.0]
    assert _objects(hosts, spec) == [0.0, 0.0, 0.0]
    assert image_props.ImagePropertiesWeigher().weigh_object(
        hosts[2], spec) == 0.0
    # No image properties requested: nothing to compare.
    conf.set_override('image_props_weight_multiplier', 1.0,
                      'filter_scheduler')
    assert _rows(hosts, fakes.fake_spec()) == [0.0, 0.0, 0.0]
    assert reader.calls == []


def test_an_aggregate_override_makes_the_weigher_read(conf):
    reader = FakeReader({})
    hosts = _fleet(reader)
    hosts[0].aggregates = [fakes.fake_aggregate(1, hosts=['host1'], metadata={
        'image_props_weight_multiplier': '2'})]
    spec = fakes.fake_spec(image_props=LINUX_Q35)
    assert _rows(hosts, spec) == [0.0, 2.0, 4.0]
    assert image_props.ImagePropertiesWeigher().weigh_object(
        hosts[0], spec) == 0.0
    assert len(reader.calls) == 2


def test_attached_props_win_and_are_not_looked_up(multiplier):
    reader = FakeReader({})
    inst = _instance()
    inst.image_props = {'os_distro': 'linux'}
    host = _host(1, reader, inst)
    spec = fakes.fake_spec(image_props=LINUX_Q35)
    assert image_props.ImagePropertiesWeigher().weigh_object(host, spec) == 1.0
    assert reader.calls == [[]]


def test_a_stored_value_imagemetaprops_rejects_is_skipped(multiplier):
    inst = _instance()
    reader = FakeReader({inst.uuid: {'os_distro': 'linux',
                                     'hw_cpu_cores': 'many'}})
    spec = fakes.fake_spec(image_props=LINUX_Q35)
    assert image_props.ImagePropertiesWeigher().weigh_object(
        _host(1, reader, inst), spec) == 1.0


def test_a_new_epoch_weighs_the_kept_rows_again(multiplier):
    reader = FakeReader({})
    hosts = _fleet(reader)
    table = HostTable(hosts)
    rows = np.arange(len(hosts))
    weigher = image_props.ImagePropertiesWeigher()
    spec = fakes.fake_spec(image_props=LINUX_Q35)
    reader.down.add('cell-b')
    assert weigher.weigh_rows(table, rows, spec).tolist() == [0.0, 2.0, 0.0]
    assert len(reader.calls[0]) == 4
    reader.down.clear()
    # Same epoch: the kept weights (what a cell outage gave) stay; host3,
    # whose instances were left out, is looked up again.
    assert weigher.weigh_rows(table, rows, spec).tolist() == [0.0, 2.0, 0.0]
    assert len(reader.calls[1]) == 2
    reader.epoch += 1
    assert weigher.weigh_rows(table, rows, spec).tolist() == [0.0, 2.0, 4.0]
    # Every row looked up completely: no more lookups that may read.
    assert len(reader.calls) == 2


def test_rows_looked_up_again_only_when_they_change(multiplier):
    reader = FakeReader({})
    hosts = _fleet(reader)
    table = HostTable(hosts)
    rows = np.arange(len(hosts))
    weigher = image_props.ImagePropertiesWeigher()
    assert weigher.weigh_rows(table, rows, fakes.fake_spec(
        image_props=LINUX_Q35)).tolist() == [0.0, 2.0, 4.0]
    assert len(reader.calls) == 1
    # Another image: weighed again from the cache, no read.
    assert weigher.weigh_rows(table, rows, fakes.fake_spec(
        image_props={'os_distro': 'linux'})).tolist() == [0.0, 1.0, 2.0]
    assert len(reader.calls) == 1 and reader.peeks == 6
    # host2 gets another instance: only its row is looked up again.
    extra = _instance()
    reader.stored[extra.uuid] = dict(LINUX_Q35)
    hosts[1].instances[extra.uuid] = extra
    table.sync([hosts[1]])
    assert weigher.weigh_rows(table, rows, fakes.fake_spec(
        image_props=LINUX_Q35)).tolist() == [0.0, 4.0, 4.0]
    assert [uuid for _cell, uuid, _stamp in reader.calls[1]] == list(
        hosts[1].instances)


def test_our_own_schema_has_no_reader(multiplier):
    host = fakes.fake_host_state(instances={
        'i': _instance(architecture='x86_64')})
    spec = fakes.fake_spec(image_props={'hw_architecture': 'x86_64'})
    assert image_props.ImagePropertiesWeigher().weigh_object(host, spec) == 1.0


def test_an_instance_placed_by_this_service_is_not_looked_for(multiplier):
    reader = FakeReader({})
    spec = fakes.fake_spec(image_props=LINUX_Q35, memory_mb=1)
    placed = instance_obj.Instance.placed(str(uuid.uuid4()), 'host1',
                                          'node1', spec)
    host = _host(1, reader, placed)
    assert image_props.ImagePropertiesWeigher().weigh_object(host, spec) == 0.0
    assert reader.calls == [[]]


def test_weights_kept_without_the_stored_properties_are_not_reused(conf):
    reader = FakeReader({})
    hosts = _fleet(reader)
    table = HostTable(hosts)
    rows = np.arange(len(hosts))
    weigher = image_props.ImagePropertiesWeigher()
    spec = fakes.fake_spec(image_props=LINUX_Q35)
    assert weigher.weigh_rows(table, rows, spec).tolist() == [0.0, 0.0, 0.0]
    conf.set_override('image_props_weight_multiplier', 1.0,
                      'filter_scheduler')
    assert weigher.weigh_rows(table, rows, spec).tolist() == [0.0, 2.0, 4.0]


def test_an_override_on_any_host_of_the_view_makes_it_read(conf):
    reader = FakeReader({})
    hosts = _fleet(reader)
    hosts[0].aggregates = [fakes.fake_aggregate(1, hosts=['host1'], metadata={
        'image_props_weight_multiplier': '2'})]
    table = HostTable(hosts)
    weigher = image_props.ImagePropertiesWeigher()
    spec = fakes.fake_spec(image_props=LINUX_Q35)
    # host1 (the only one with a non-zero multiplier) is not weighed.
    assert weigher.weigh_rows(table, np.arange(1, 3), spec).tolist() == [
        2.0, 4.0]
