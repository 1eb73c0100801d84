"""Log handlers write what UTF-8 cannot encode escaped, never drop it."""

import logging

from scheduler import config


def _logger(tmp_path, name):
    path = tmp_path / 'service.log'
    handler = logging.FileHandler(path, encoding='utf-8')
    logger = logging.getLogger('test-escape-' + name)
    logger.propagate = False
    logger.addHandler(handler)
    config.escape_unencodable(logger)
    config.escape_unencodable(logger)  # twice: one filter only
    assert len(handler.filters) == 1
    return logger, handler, path


def test_a_lone_surrogate_in_a_message_is_written_escaped(tmp_path, capsys):
    logger, handler, path = _logger(tmp_path, 'message')
    logger.warning('Dropping %s cast', 'no-such-method-\ud800')
    handler.close()
    assert path.read_text() == 'Dropping no-such-method-\\ud800 cast\n'
    assert 'Logging error' not in capsys.readouterr().err


def test_a_lone_surrogate_in_an_exception_is_written_escaped(tmp_path,
                                                             capsys):
    logger, handler, path = _logger(tmp_path, 'exception')
    try:
        raise ValueError('no such method \udc80')
    except ValueError:
        logger.exception('Exception during message handling')
    handler.close()
    text = path.read_text()
    assert text.startswith('Exception during message handling\n')
    assert 'ValueError: no such method \\udc80' in text
    assert 'Logging error' not in capsys.readouterr().err


def test_encodable_text_is_left_alone(tmp_path):
    logger, handler, path = _logger(tmp_path, 'plain')
    logger.warning('h\u00f4te %s', '\u00e9t\u00e9')
    handler.close()
    assert path.read_text(encoding='utf-8') == 'h\u00f4te \u00e9t\u00e9\n'
