"""``scheduler.db.nova.image_props``: instances' image properties read in
their cell's ``instance_system_metadata``, cached per instance."""

import collections

import pytest
import sqlalchemy as sa

from scheduler.db.nova import image_props

Cell = collections.namedtuple('Cell', 'id uuid engine')


class FakeAccess:
    """The part of ``CellAccess`` the reader uses: ``cells`` and
    ``read_cells`` (cells in ``down`` are skipped, as a failed cell)."""

    def __init__(self, cells):
        self.cells = cells
        self.down = set()
        self.read = []           # the cell ids of each read_cells

    def read_cells(self, read, only=None):
        self.read.append(sorted(only))
        results = []
        for cell in self.cells:
            if cell.id in only and cell.uuid not in self.down:
                with cell.engine.connect() as connection:
                    results.append((cell, read(cell, connection)))
        return results


def _cell(tmp_path, cell_id, rows):
    engine = sa.create_engine('sqlite:///%s' % (tmp_path / ('c%d' % cell_id)))
    image_props.SYSTEM_METADATA.create(engine)
    with engine.begin() as connection:
        connection.execute(image_props.SYSTEM_METADATA.insert(), [
            dict(zip(('instance_uuid', 'key', 'value', 'deleted'), row,
                     strict=True))
            for row in rows])
    return Cell(cell_id, 'cell-%d' % cell_id, engine)


@pytest.fixture
def access(tmp_path):
    """cell 1: instance a (linux, q35, a deleted row, non-image keys);
    cell 2: instance b (windows)."""
    cells = [
        _cell(tmp_path, 1, [
            ('a', 'image_os_distro', 'linux', 0),
            ('a', 'image_hw_machine_type', 'q35', 0),
            ('a', 'image_hw_disk_bus', 'ide', 7),          # soft-deleted
            ('a', 'image_min_ram', '0', 0),                # an attribute
            ('a', 'image_img_mappings', '[]', 0),          # skipped
            ('a', 'owner_user_name', 'alice', 0),          # not image_
            ('a', 'imagexfoo', 'bar', 0)]),                # LIKE-proof
        _cell(tmp_path, 2, [('b', 'image_os_distro', 'windows', 0)])]
    yield FakeAccess(cells)
    for cell in cells:
        cell.engine.dispose()


def test_properties_of_follows_nova_get_image_from_system_metadata():
    assert image_props.properties_of([
        ('image_os_distro', 'linux'), ('image_disk_format', 'qcow2'),
        ('image_container_format', 'bare'), ('image_min_disk', '1'),
        ('image_block_device_mapping', '[]'), ('image_mappings', '[]'),
        ('image_hw_rng_model', None), ('boot_roles', 'admin'),
        ('image_base_image_ref', 'abc')]) == {
        'os_distro': 'linux', 'base_image_ref': 'abc'}


def test_reads_each_instance_in_its_cell_once_per_cell(access):
    reader = image_props.ImagePropsReader(access)
    found = reader.lookup([('cell-1', 'a', 1), ('cell-2', 'b', 1)])
    assert found == {'a': {'os_distro': 'linux', 'hw_machine_type': 'q35'},
                     'b': {'os_distro': 'windows'}}
    assert access.read == [[1, 2]]
    assert reader.reads == 2


def test_the_wrong_cell_does_not_find_the_instance(access):
    reader = image_props.ImagePropsReader(access)
    assert reader.lookup([('cell-1', 'b', 1)]) == {'b': {}}
    # Another stamp: read again, in the right cell this time.
    assert reader.lookup([('cell-2', 'b', 2)]) == {
        'b': {'os_distro': 'windows'}}


def test_cached_while_the_stamp_holds(access):
    reader = image_props.ImagePropsReader(access)
    reader.lookup([('cell-1', 'a', 'v1')])
    with access.cells[0].engine.begin() as connection:
        connection.execute(image_props.SYSTEM_METADATA.update().values(
            value='bsd').where(image_props.SYSTEM_METADATA.c.key ==
                               'image_os_distro'))
    assert reader.lookup([('cell-1', 'a', 'v1')])['a']['os_distro'] == (
        'linux')
    assert access.read == [[1]]
    # A rebuild saves the instance: a new stamp, read again.
    assert reader.lookup([('cell-1', 'a', 'v2')])['a']['os_distro'] == 'bsd'
    assert access.read == [[1], [1]]


def test_not_found_is_cached_as_no_properties(access):
    reader = image_props.ImagePropsReader(access)
    assert reader.lookup([('cell-1', 'new', None)]) == {'new': {}}
    assert reader.lookup([('cell-1', 'new', None)]) == {'new': {}}
    assert access.read == [[1]]


def test_unknown_or_failed_cells_are_left_out_and_change_the_epoch(access):
    reader = image_props.ImagePropsReader(access)
    assert reader.lookup([('no-such-cell', 'a', 1), (None, 'b', 1)]) == {}
    assert access.read == []
    epoch = reader.epoch
    access.down.add('cell-2')
    assert reader.lookup([('cell-1', 'a', 1), ('cell-2', 'b', 1)]) == {
        'a': {'os_distro': 'linux', 'hw_machine_type': 'q35'}}
    assert reader.epoch == epoch + 1
    # Still down: the same instances left out, the same epoch.
    reader.lookup([('cell-2', 'b', 1)])
    assert reader.epoch == epoch + 1
    access.down.clear()
    assert reader.lookup([('cell-2', 'b', 1)]) == {
        'b': {'os_distro': 'windows'}}
    assert reader.epoch == epoch + 2


def test_in_lists_are_chunked(access, monkeypatch):
    monkeypatch.setattr(image_props, 'CHUNK', 2)
    reader = image_props.ImagePropsReader(access)
    wanted = [('cell-1', name, 1) for name in ('a', 'x', 'y', 'z', 'w')]
    assert reader.lookup(wanted)['a']['os_distro'] == 'linux'
    assert reader.reads == 3
    assert access.read == [[1]]


def test_least_recently_asked_entries_are_dropped(access):
    reader = image_props.ImagePropsReader(access, size=2)
    reader.lookup([('cell-1', 'a', 1), ('cell-2', 'b', 1)])
    reader.lookup([('cell-1', 'a', 1)])          # a is the most recent
    reader.lookup([('cell-1', 'c', 1)])          # drops b
    reads = reader.reads
    reader.lookup([('cell-1', 'a', 1), ('cell-1', 'c', 1)])
    assert reader.reads == reads
    reader.lookup([('cell-2', 'b', 1)])
    assert reader.reads == reads + 1


def test_instances_of_one_image_share_their_properties(tmp_path):
    cell = _cell(tmp_path, 1, [(name, 'image_os_distro', 'linux', 0)
                               for name in ('a', 'b')])
    reader = image_props.ImagePropsReader(FakeAccess([cell]))
    found = reader.lookup([('cell-1', 'a', 1), ('cell-1', 'b', 1)])
    assert found['a'] is found['b']
    cell.engine.dispose()



def test_cached_reads_nothing_and_ignores_stamps(access):
    reader = image_props.ImagePropsReader(access)
    reader.lookup([('cell-1', 'a', 1)])
    assert reader.cached(['a', 'b']) == {
        'a': {'os_distro': 'linux', 'hw_machine_type': 'q35'}}
    assert access.read == [[1]]
