"""Fixtures shared by the versioned-object tests.

* ``serializer``: the RPC layer's ``ObjectSerializer``.
* ``roundtrip``: ``roundtrip(entity)`` serializes ``entity`` as the RPC
  layer does, passes it through ``json.dumps`` / ``json.loads`` (what a
  real transport does to a message body) and deserializes it again.
* ``to_wire``: ``to_wire(entity)`` is only the first half: the JSON-clean
  primitive a peer would receive.
"""

import json

import pytest

from scheduler.objects import base


@pytest.fixture
def serializer():
    return base.ObjectSerializer()


@pytest.fixture
def to_wire(serializer):
    def _to_wire(entity):
        return json.loads(json.dumps(serializer.serialize_entity(None,
                                                                 entity)))
    return _to_wire


@pytest.fixture
def roundtrip(serializer, to_wire):
    def _roundtrip(entity):
        return serializer.deserialize_entity(None, to_wire(entity))
    return _roundtrip
