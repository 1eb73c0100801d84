"""Cell mappings whose ``database_connection`` is a template (issue 31,
item 8c): filled as Nova 34's ``CellMapping._format_url`` fills them.

The expected URLs below are what Nova 34.0.0's own function returned
for the same template and source URL (run once in the Nova venv of
``tools/test-setup.sh``); this process never imports Nova.
"""

import logging

import pytest
import sqlalchemy as sa

from scheduler.db import migration
from scheduler.db.nova import cells
from scheduler.db.nova import schema
from scheduler.db.nova import source as nova_source
from scheduler.db.nova import url_templates
from scheduler_tools import writers

CELL1 = '4a5d0d5c-7bb0-4f41-8f0d-4f6d7d1b1a11'

# (template, source URL, what Nova 34 makes of it)
NOVA_FILLED = [
    ('{scheme}://{username}:{password}@{hostname}/nova_cell1?{query}',
     'mysql+pymysql://nova:se%40cret@DB.Example:3306/nova_api'
     '?charset=utf8',
     'mysql+pymysql://nova:se%40cret@db.example/nova_cell1?charset=utf8'),
    ('{scheme}://{username}:{password}@{hostname}:{port}/{path}#{fragment}',
     'postgresql+psycopg2://u:p@[::1]:5432/nova_cell0?x=1#frag',
     'postgresql+psycopg2://u:p@::1:5432/nova_cell0#frag'),
    ('{scheme}://{username}@{hostname}:{port}/nova_cell2',
     'postgresql+psycopg2://postgres@127.0.0.1:5432/postgres',
     'postgresql+psycopg2://postgres@127.0.0.1:5432/nova_cell2'),
    ('{scheme}://{username1}:{password1}@{hostname1}:{port1},'
     '{username2}:{password2}@{hostname2}:{port2}/cell',
     'mysql://a:b@h1:1,c@h2,h3:3/db',
     'mysql://a:b@h1:1,c:None@h2:None/cell'),
    ('{hostname1}-{username1}-{password1}-{port1}|'
     '{hostname2}-{username2}-{password2}-{port2}',
     'rabbit://u@x:p@h1:5,u2:p:w@h2/db',
     'x:p@h1:5-u-None-None|h2-u2-p:w-None'),
    ('{scheme}://{hostname}:{port}/x', 'sqlite:////tmp/x.db',
     'sqlite://None:None/x'),
    ('{path}', 'mysql://a@h/db;params?q=1', 'db;params'),
    ('mysql://u:p@h/plain', 'mysql://a:b@h/db', 'mysql://u:p@h/plain'),
]


@pytest.mark.parametrize('template,source,expected', NOVA_FILLED)
def test_templates_are_filled_as_nova_fills_them(template, source,
                                                 expected):
    assert url_templates.fill(template, source) == expected


@pytest.mark.parametrize('template,source,why', [
    ('{scheme}://{nope}/x', 'mysql://a:b@h/db', 'names {nope}, which is '
     'none of fragment, hostname, password, path, port, query, scheme, '
     'username'),
    ('mysql://u:p{@h/x', 'mysql://a:b@h/db', 'no template'),
    ('{port:d}', 'mysql://a@h/db', 'no template'),
    ('{scheme}', 'mysql://a:s3cret@h:notaport/db', 'cannot be split'),
])
def test_what_nova_cannot_fill_is_a_readable_error(template, source, why):
    with pytest.raises(url_templates.TemplateError, match=why) as error:
        url_templates.fill(template, source)
    assert 's3cret' not in str(error.value)


def _mapping(url):
    return {'id': 2, 'uuid': CELL1, 'name': 'cell1', 'disabled': False,
            'database_connection': url}


TEMPLATE = '{scheme}://{username}:{password}@{hostname}:{port}/nova_cell1'


def test_the_api_database_fills_templates_by_default(conf):
    conf.set_override('connection', 'mysql+pymysql://nova:pw@api:3306/'
                      'nova_api', 'api_database')
    assert cells.database_url(_mapping(TEMPLATE), conf) == (
        'mysql+pymysql://nova:pw@api:3306/nova_cell1', None)


def test_the_option_names_the_url_that_fills_templates(conf):
    conf.set_override('connection', 'mysql+pymysql://nova:pw@api:3306/'
                      'nova_api', 'api_database')
    conf.set_override('cell_template_connection', 'postgresql+psycopg2://'
                      'sched:pw2@cells:5432/nova_cell0', 'scheduler')
    assert cells.database_url(_mapping(TEMPLATE), conf) == (
        'postgresql+psycopg2://sched:pw2@cells:5432/nova_cell1', None)


def test_an_unfillable_template_is_used_as_stored_and_explained(
        conf, caplog):
    conf.set_override('connection', 'sqlite:///api.sqlite', 'api_database')
    stored = '{scheme}://{host}/nova_cell1'
    with caplog.at_level(logging.WARNING, 'scheduler.db.nova.cells'):
        url, problem = cells.database_url(_mapping(stored), conf)
    assert url == stored
    assert 'names {host}' in problem
    assert 'Cell cell1 (%s): its database_connection is no template' % (
        CELL1) in caplog.text
    with pytest.raises(cells.CellsError) as error:
        cells.open_cell(_mapping(stored), conf)
    message = str(error.value)
    assert message.startswith('cell cell1 (%s): bad database URL' % CELL1)
    assert message.endswith(problem)


def _nova_cell(path):
    url = 'sqlite:///%s' % path
    engine = sa.create_engine(url)
    schema.CELL.create_all(engine)
    engine.dispose()
    return url


def test_a_templated_cell_mapping_is_opened_at_start(conf, tmp_path):
    """The issue's defect: a template was refused at start as a bad
    URL.  Here ``{scheme}`` comes from the API database's URL."""
    cell_path = tmp_path / 'cell1.sqlite'
    _nova_cell(cell_path)
    api_url = 'sqlite:///%s' % (tmp_path / 'api.sqlite')
    engine = sa.create_engine(api_url)
    schema.API.create_all(engine)
    with engine.begin() as connection:
        connection.execute(sa.insert(schema.CELL_MAPPINGS).values(
            id=2, uuid=CELL1, name='cell1', disabled=False,
            database_connection='{scheme}:///%s' % cell_path))
    engine.dispose()
    conf.set_override('connection', api_url, 'api_database')
    writers.reset_engine('sqlite:///%s' % (tmp_path / 'own.sqlite'))
    made = nova_source.NovaSource(conf)
    try:
        migration.db_sync()
        made.start()
        [cell] = made.cells
        assert str(cell.engine.url) == 'sqlite:///%s' % cell_path
    finally:
        made.stop()
        writers.reset_engine()
