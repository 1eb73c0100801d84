"""Recording on for one test: in multiprocess mode over a directory of
its own (``recording``), or in this process only (``in_process``)."""

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client import multiprocess
from prometheus_client import values

from scheduler.observability import metrics


@pytest.fixture
def restore_prometheus(monkeypatch):
    """Whatever a test enables is off again after it, and
    prometheus_client's value class is put back."""
    monkeypatch.setattr(values, 'ValueClass', values.ValueClass)
    yield
    metrics.disable()
    values.close_all_multiprocess_files()


@pytest.fixture
def recording(tmp_path, monkeypatch, restore_prometheus):
    """Recording on, each value in the files of ``tmp_path`` (returned),
    as in a worker of the service."""
    monkeypatch.setenv(metrics.MULTIPROC_ENV, str(tmp_path))
    metrics.enable()
    return tmp_path


@pytest.fixture
def in_process(monkeypatch, restore_prometheus):
    """Recording on in this process only; returns its registry."""
    monkeypatch.delenv(metrics.MULTIPROC_ENV, raising=False)
    return metrics.enable()


@pytest.fixture
def added_up():
    """``added_up(directory)``: a registry of the values of every process
    that wrote in ``directory``, added up as the endpoint serves them."""
    def collect(directory):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=str(directory))
        return registry
    return collect
