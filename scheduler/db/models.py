"""SQLAlchemy models of the tables the scheduler reads (Nova Newton/Ocata).

Table names, column names, types, nullability, unique constraints and
indexes follow Nova's Newton/Ocata schema, so that the service can run
against a copy of a Nova database, and Nova's tools can read ours.
Which of Nova's two databases each table follows:

* cell database (``nova``): ``compute_nodes``, ``services`` and
  ``instances``.  They carry ``created_at``, ``updated_at``, ``deleted_at``
  and ``deleted``; a live row has ``deleted = 0`` and a soft-deleted row
  ``deleted = id``.
* API database (``nova_api``): ``aggregates``, ``aggregate_hosts``,
  ``aggregate_metadata``, ``instance_groups``, ``instance_group_member``
  (whose member column is ``instance_uuid``) and ``instance_group_policy``
  (with the Rocky ``rules`` column).  They carry ``created_at`` and
  ``updated_at`` only, and rows are deleted for real.

Our own additions, absent from Nova: ``compute_nodes.generation`` and the
indexes on ``compute_nodes.updated_at``, ``compute_nodes.created_at`` and
``services.updated_at``, which serve the scheduler's incremental refresh;
the resource claims of ``scheduler.db.claims``: the ``compute_nodes``
columns ``claimed_vcpus``, ``claimed_memory_mb``, ``claimed_disk_gb`` and
``claims_updated_at``, and the ``scheduler_claims`` table; and, for Nova
database mode (``docs/nova-databases.rst``), the
``scheduler_node_claims`` table, where the claims on the compute nodes of
Nova's own cell databases are summed.  The alembic revisions of this
schema are kept in ``scheduler_alembic_version`` (``VERSION_TABLE``), not
in alembic's default ``alembic_version``, which Nova's databases use.

All datetimes are naive UTC, as Nova stores them.  The JSON columns
(``compute_nodes.stats``, ``cpu_info``, ``supported_instances``,
``metrics``, ``pci_stats``, ``numa_topology``, ``extra_resources`` and
``instance_group_policy.rules``) are text columns holding JSON strings.
"""

import datetime

from oslo_utils import timeutils
from sqlalchemy import BigInteger
from sqlalchemy import Boolean
from sqlalchemy import DateTime
from sqlalchemy import Float
from sqlalchemy import ForeignKey
from sqlalchemy import Index
from sqlalchemy import Integer
from sqlalchemy import String
from sqlalchemy import Text
from sqlalchemy import TypeDecorator
from sqlalchemy import UniqueConstraint
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.orm import Mapped
from sqlalchemy.orm import mapped_column

# The table of the alembic revisions of this schema.
VERSION_TABLE = 'scheduler_alembic_version'

# Nova's "MediumText": TEXT, or MEDIUMTEXT (16 MiB) on MySQL.
MediumText = Text().with_variant(mysql.MEDIUMTEXT(), 'mysql')


class IPAddress(TypeDecorator):
    """Nova's ``IPAddress``: a shortened IPv6 address fits in 39
    characters; PostgreSQL has a native type, INET.  The PostgreSQL
    dialect is imported only when a PostgreSQL engine needs it (about
    20 ms a command line spares)."""

    impl = String(39)
    cache_ok = True

    def load_dialect_impl(self, dialect):
        if dialect.name == 'postgresql':
            from sqlalchemy.dialects import postgresql
            return dialect.type_descriptor(postgresql.INET())
        return super().load_dialect_impl(dialect)


def _utcnow():
    return timeutils.utcnow()


class Base(DeclarativeBase):
    """Declarative base of every table; ``Base.metadata`` is the schema."""


class TimestampMixin:
    """``created_at`` / ``updated_at``, filled in on insert and update."""

    created_at: Mapped[datetime.datetime | None] = mapped_column(
        DateTime, default=_utcnow)
    updated_at: Mapped[datetime.datetime | None] = mapped_column(
        DateTime, onupdate=_utcnow)


class SoftDeleteMixin:
    """Nova's soft delete: ``deleted = id`` and ``deleted_at`` when gone."""

    deleted_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    deleted: Mapped[int | None] = mapped_column(
        Integer, default=0, server_default='0')


def _counter(nullable=True):
    """An integer column that starts at 0, in Python and in the DDL."""
    return mapped_column(Integer, nullable=nullable, default=0,
                         server_default='0')


def _flag():
    """A boolean column that starts false, in Python and in the DDL."""
    return mapped_column(Boolean, default=False, server_default='0')


class ClaimedNodeMixin:
    """The columns a claim of ``scheduler.db.claims`` checks and writes,
    shared by ``compute_nodes`` and ``scheduler_node_claims`` so that the
    same statements serve both: the totals ``vcpus``, ``memory_mb``
    (MiB) and ``local_gb`` (GiB), their reported ``*_used``, the three
    allocation ratios (NULL or 0: the default), the sums of the live
    claims ``claimed_vcpus``, ``claimed_memory_mb`` (MiB) and
    ``claimed_disk_gb`` (GiB), ``generation`` and ``claims_updated_at``.
    """

    vcpus: Mapped[int] = mapped_column(Integer, nullable=False)
    memory_mb: Mapped[int] = mapped_column(Integer, nullable=False)
    local_gb: Mapped[int] = mapped_column(Integer, nullable=False)
    vcpus_used: Mapped[int] = mapped_column(Integer, nullable=False)
    memory_mb_used: Mapped[int] = mapped_column(Integer, nullable=False)
    local_gb_used: Mapped[int] = mapped_column(Integer, nullable=False)
    ram_allocation_ratio: Mapped[float | None] = mapped_column(Float)
    cpu_allocation_ratio: Mapped[float | None] = mapped_column(Float)
    disk_allocation_ratio: Mapped[float | None] = mapped_column(Float)
    generation: Mapped[int] = _counter(nullable=False)
    claimed_vcpus: Mapped[int] = _counter(nullable=False)
    claimed_memory_mb: Mapped[int] = _counter(nullable=False)
    claimed_disk_gb: Mapped[int] = _counter(nullable=False)
    claims_updated_at: Mapped[datetime.datetime | None] = mapped_column(
        DateTime)


class ComputeNode(Base, TimestampMixin, SoftDeleteMixin,
                  ClaimedNodeMixin):
    """One hypervisor node (``compute_nodes``), as its compute agent reports.

    Sizes: ``memory_mb`` in MiB, ``local_gb`` and ``disk_available_least``
    in GiB.  ``generation`` is our own column: it is bumped by every write,
    for optimistic concurrency (a reader can tell whether a row changed
    since it last saw it, and a writer whether it raced another one).

    Also our own, written only by ``scheduler.db.claims``:
    ``claimed_vcpus``, ``claimed_memory_mb`` (MiB) and ``claimed_disk_gb``
    (GiB), the sums of the node's live ``scheduler_claims`` rows, and
    ``claims_updated_at``, the ``updated_at`` that the last claim or
    release wrote (NULL before the first one): while the two are equal,
    the last write of the row was the scheduler's, not a usage report of
    the compute node.
    """

    __tablename__ = 'compute_nodes'
    __table_args__ = (
        UniqueConstraint(
            'host', 'hypervisor_hostname', 'deleted',
            name='uniq_compute_nodes0host0hypervisor_hostname0deleted'),
        Index('compute_nodes_uuid_idx', 'uuid', unique=True),
        Index('compute_nodes_updated_at_idx', 'updated_at'),
        Index('compute_nodes_created_at_idx', 'created_at'),
        Index('compute_nodes_deleted_at_idx', 'deleted_at'),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    service_id: Mapped[int | None] = mapped_column(Integer)
    host: Mapped[str | None] = mapped_column(String(255))
    uuid: Mapped[str | None] = mapped_column(String(36))
    hypervisor_type: Mapped[str] = mapped_column(MediumText, nullable=False)
    hypervisor_version: Mapped[int] = mapped_column(Integer, nullable=False)
    hypervisor_hostname: Mapped[str | None] = mapped_column(String(255))
    free_ram_mb: Mapped[int | None] = mapped_column(Integer)
    free_disk_gb: Mapped[int | None] = mapped_column(Integer)
    current_workload: Mapped[int | None] = mapped_column(Integer)
    running_vms: Mapped[int | None] = mapped_column(Integer)
    cpu_info: Mapped[str] = mapped_column(MediumText, nullable=False)
    disk_available_least: Mapped[int | None] = mapped_column(Integer)
    host_ip: Mapped[str | None] = mapped_column(IPAddress)
    supported_instances: Mapped[str | None] = mapped_column(Text)
    metrics: Mapped[str | None] = mapped_column(Text)
    pci_stats: Mapped[str | None] = mapped_column(Text)
    extra_resources: Mapped[str | None] = mapped_column(Text)
    stats: Mapped[str | None] = mapped_column(Text, default='{}')
    numa_topology: Mapped[str | None] = mapped_column(Text)
    mapped: Mapped[int | None] = _counter()


class Service(Base, TimestampMixin, SoftDeleteMixin):
    """One service process (``services``); ``report_count`` is its
    heartbeat and ``last_seen_up`` the time of the last one."""

    __tablename__ = 'services'
    __table_args__ = (
        UniqueConstraint('host', 'topic', 'deleted',
                         name='uniq_services0host0topic0deleted'),
        UniqueConstraint('host', 'binary', 'deleted',
                         name='uniq_services0host0binary0deleted'),
        Index('services_uuid_idx', 'uuid', unique=True),
        Index('services_updated_at_idx', 'updated_at'),
        Index('services_created_at_idx', 'created_at'),
        Index('services_deleted_at_idx', 'deleted_at'),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str | None] = mapped_column(String(36))
    host: Mapped[str | None] = mapped_column(String(255))
    binary: Mapped[str | None] = mapped_column(String(255))
    topic: Mapped[str | None] = mapped_column(String(255))
    report_count: Mapped[int] = _counter(nullable=False)
    disabled: Mapped[bool | None] = _flag()
    disabled_reason: Mapped[str | None] = mapped_column(String(255))
    last_seen_up: Mapped[datetime.datetime | None] = mapped_column(
        DateTime)
    forced_down: Mapped[bool | None] = _flag()
    version: Mapped[int | None] = _counter()


class Aggregate(Base, TimestampMixin):
    """A host aggregate (``aggregates``, API-database shape)."""

    __tablename__ = 'aggregates'
    __table_args__ = (
        Index('aggregate_uuid_idx', 'uuid'),
        UniqueConstraint('name', name='uniq_aggregate0name'),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    uuid: Mapped[str | None] = mapped_column(String(36))
    name: Mapped[str | None] = mapped_column(String(255))


class AggregateHost(Base, TimestampMixin):
    """Membership of a service host name in an aggregate."""

    __tablename__ = 'aggregate_hosts'
    __table_args__ = (
        UniqueConstraint('host', 'aggregate_id',
                         name='uniq_aggregate_hosts0host0aggregate_id'),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    host: Mapped[str | None] = mapped_column(String(255))
    aggregate_id: Mapped[int] = mapped_column(
        Integer, ForeignKey('aggregates.id'), nullable=False)


class AggregateMetadata(Base, TimestampMixin):
    """One ``key = value`` pair of an aggregate's metadata."""

    __tablename__ = 'aggregate_metadata'
    __table_args__ = (
        UniqueConstraint('aggregate_id', 'key',
                         name='uniq_aggregate_metadata0aggregate_id0key'),
        Index('aggregate_metadata_key_idx', 'key'),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    key: Mapped[str] = mapped_column(String(255), nullable=False)
    value: Mapped[str] = mapped_column(String(255), nullable=False)
    aggregate_id: Mapped[int] = mapped_column(
        Integer, ForeignKey('aggregates.id'), nullable=False)


class Instance(Base, TimestampMixin, SoftDeleteMixin):
    """The columns of Nova's ``instances`` that scheduling touches.

    ``host`` is the service host name and ``node`` the hypervisor
    hostname; sizes are ``memory_mb`` in MiB, ``root_gb`` and
    ``ephemeral_gb`` in GiB; ``instance_type_id`` is the flavor's id.
    """

    __tablename__ = 'instances'
    __table_args__ = (
        UniqueConstraint('uuid', name='uniq_instances0uuid'),
        Index('instances_host_node_deleted_idx', 'host', 'node', 'deleted'),
        Index('instances_host_deleted_cleaned_idx',
              'host', 'deleted', 'cleaned'),
        Index('instances_uuid_deleted_idx', 'uuid', 'deleted'),
        Index('instances_project_id_deleted_idx', 'project_id', 'deleted'),
        Index('instances_updated_at_idx', 'updated_at'),
        Index('instances_created_at_idx', 'created_at'),
        Index('instances_deleted_at_idx', 'deleted_at'),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    user_id: Mapped[str | None] = mapped_column(String(255))
    project_id: Mapped[str | None] = mapped_column(String(255))
    image_ref: Mapped[str | None] = mapped_column(String(255))
    power_state: Mapped[int | None] = mapped_column(Integer)
    vm_state: Mapped[str | None] = mapped_column(String(255))
    task_state: Mapped[str | None] = mapped_column(String(255))
    memory_mb: Mapped[int | None] = mapped_column(Integer)
    vcpus: Mapped[int | None] = mapped_column(Integer)
    root_gb: Mapped[int | None] = mapped_column(Integer)
    ephemeral_gb: Mapped[int | None] = mapped_column(Integer)
    host: Mapped[str | None] = mapped_column(String(255))
    node: Mapped[str | None] = mapped_column(String(255))
    instance_type_id: Mapped[int | None] = mapped_column(Integer)
    launched_on: Mapped[str | None] = mapped_column(MediumText)
    availability_zone: Mapped[str | None] = mapped_column(String(255))
    os_type: Mapped[str | None] = mapped_column(String(255))
    architecture: Mapped[str | None] = mapped_column(String(255))
    vm_mode: Mapped[str | None] = mapped_column(String(255))
    cleaned: Mapped[int | None] = _counter()


class InstanceGroup(Base, TimestampMixin):
    """A server group (``instance_groups``, API-database shape)."""

    __tablename__ = 'instance_groups'
    __table_args__ = (
        UniqueConstraint('uuid', name='uniq_instance_groups0uuid'),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    user_id: Mapped[str | None] = mapped_column(String(255))
    project_id: Mapped[str | None] = mapped_column(String(255))
    uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    name: Mapped[str | None] = mapped_column(String(255))


class InstanceGroupMember(Base, TimestampMixin):
    """A member instance (by uuid) of a server group."""

    __tablename__ = 'instance_group_member'
    __table_args__ = (
        Index('instance_group_member_instance_idx', 'instance_uuid'),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    instance_uuid: Mapped[str | None] = mapped_column(String(255))
    group_id: Mapped[int] = mapped_column(
        Integer, ForeignKey('instance_groups.id'), nullable=False)


class InstanceGroupPolicy(Base, TimestampMixin):
    """A server group's policy (``affinity``, ``anti-affinity``,
    ``soft-affinity``, ``soft-anti-affinity``) and its JSON ``rules``."""

    __tablename__ = 'instance_group_policy'
    __table_args__ = (
        Index('instance_group_policy_policy_idx', 'policy'),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    policy: Mapped[str | None] = mapped_column(String(255))
    group_id: Mapped[int] = mapped_column(
        Integer, ForeignKey('instance_groups.id'), nullable=False)
    rules: Mapped[str | None] = mapped_column(Text)


class SchedulerClaim(Base, TimestampMixin):
    """A resource claim of the scheduler (``scheduler_claims``, our own).

    One row per instance for which a scheduler reserved room on a compute
    node and whose usage the node has not reported yet: ``vcpus``,
    ``memory_mb`` (MiB) and ``disk_gb`` (GiB) on ``compute_node_id``
    (``host`` is that node's service host name).  The same amounts are
    added to the node's ``claimed_*`` columns.  A row is never updated: a
    new claim for the same instance replaces it with a new id.
    ``expires_at`` (naive UTC) is when the claim is dropped if the
    instance never shows up.  Ids are never reused (``AUTOINCREMENT`` on
    SQLite), so a row id names one claim forever.  In Nova database mode
    ``compute_node_id`` is the view's id of a node of a Nova cell (a
    64-bit number, see ``scheduler.db.nova.ids``) and the amounts are
    summed in ``scheduler_node_claims``.  See ``scheduler.db.claims``.
    """

    __tablename__ = 'scheduler_claims'
    __table_args__ = (
        UniqueConstraint('instance_uuid',
                         name='uniq_scheduler_claims0instance_uuid'),
        Index('scheduler_claims_compute_node_id_idx', 'compute_node_id'),
        Index('scheduler_claims_expires_at_idx', 'expires_at'),
        # Ids are never reused, on SQLite too (AUTOINCREMENT).
        {'sqlite_autoincrement': True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    # INTEGER on SQLite (64 bits there), whose table is never rebuilt.
    compute_node_id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), 'sqlite'), nullable=False)
    host: Mapped[str | None] = mapped_column(String(255))
    vcpus: Mapped[int] = mapped_column(Integer, nullable=False)
    memory_mb: Mapped[int] = mapped_column(Integer, nullable=False)
    disk_gb: Mapped[int] = mapped_column(Integer, nullable=False)
    expires_at: Mapped[datetime.datetime] = mapped_column(
        DateTime, nullable=False)


class NodeClaims(Base, ClaimedNodeMixin):
    """The claims on one compute node of a Nova cell database
    (``scheduler_node_claims``, our own; Nova database mode only).

    Nova's ``compute_nodes`` cannot carry the ``claimed_*`` columns, so
    this row holds, for the node with the view's id ``id`` (see
    ``scheduler.db.nova.ids``; ``uuid`` is Nova's ``compute_nodes.uuid``,
    ``cell_uuid`` its cell mapping's uuid), what a claim checks: the
    newest usage report of the node any scheduler has seen - ``vcpus``,
    ``memory_mb`` (MiB), ``local_gb`` (GiB), their ``*_used``, the three
    allocation ratios (NULL: the default), ``deleted`` and ``host`` as
    Nova's row had them, and ``reported_at``, the row's ``updated_at``
    (else ``created_at``) - and the sums of its live ``scheduler_claims``
    rows, ``claimed_vcpus``, ``claimed_memory_mb`` (MiB) and
    ``claimed_disk_gb`` (GiB).  ``generation`` counts the claims and
    releases; they stamp ``updated_at`` and ``claims_updated_at``, which
    a new report does not (the column names are those of our
    ``compute_nodes``, so that the same claim statements serve both).
    See ``scheduler.db.claims`` and ``scheduler.db.nova.node_claims``.
    """

    __tablename__ = 'scheduler_node_claims'
    __table_args__ = (
        Index('scheduler_node_claims_uuid_idx', 'uuid'),
        Index('scheduler_node_claims_updated_at_idx', 'updated_at'),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True,
                                    autoincrement=False)
    uuid: Mapped[str] = mapped_column(String(36), nullable=False)
    cell_uuid: Mapped[str | None] = mapped_column(String(36))
    host: Mapped[str | None] = mapped_column(String(255))
    deleted: Mapped[int] = _counter(nullable=False)
    reported_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    created_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
