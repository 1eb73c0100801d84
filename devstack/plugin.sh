#!/bin/bash
# devstack plugin of the standalone scheduler service (devstack/README.rst).
#
# stack install      install the package (pip install -e, setup_package)
#                    with the driver of devstack's database URLs;
# stack post-config  write $SCHEDULER_CONF, recreate and "db sync" the
#                    scheduler's database, and in standalone mode
#                    register this node's compute host in it;
# stack extra        stop a leftover n-sch, start the heartbeat loop
#                    (standalone mode) and the service
#                    (devstack@scheduler-heartbeat, devstack@scheduler);
# unstack            stop them;
# clean              drop the database, remove $SCHEDULER_CONF_DIR and
#                    the log file.
#
# devstack sources this file, with the settings of devstack/settings.

# scheduler-manage with the service's configuration.
function _scheduler_manage {
    "$SCHEDULER_BIN_DIR/scheduler-manage" --config-file "$SCHEDULER_CONF" \
        "$@"
}

# devstack's systemctl (sudo systemctl, or systemctl --user).
function _scheduler_systemctl {
    local -a systemctl
    read -r -a systemctl <<< "${SYSTEMCTL:-sudo systemctl}"
    "${systemctl[@]}" "$@"
}

function _scheduler_check_mode {
    case "$SCHEDULER_MODE" in
        standalone|nova)
            ;;
        *)
            die $LINENO \
                "SCHEDULER_MODE=$SCHEDULER_MODE: use standalone or nova"
            ;;
    esac
}

# The cell whose database Nova's control services (and so the scheduler's
# service row) use: cell0, or cell1 with a single conductor.
function _scheduler_service_cell {
    if [[ "${CELLSV2_SETUP:-}" == "singleconductor" ]]; then
        echo cell1
    else
        echo cell0
    fi
}

# The uuid of the Nova cell of this node's compute host, for the
# Selections of standalone mode (Nova's conductor compares it with an
# instance's cell on moves); empty when unknown.
function _scheduler_cell_uuid {
    if [[ -n "$SCHEDULER_CELL_UUID" ]]; then
        echo "$SCHEDULER_CELL_UUID"
    elif is_service_enabled n-api && \
            [[ -x "${NOVA_BIN_DIR:-}/nova-manage" ]]; then
        "$NOVA_BIN_DIR/nova-manage" --config-file "$NOVA_CONF" \
            cell_v2 list_cells | \
            awk -v cell="cell${NOVA_CPU_CELL:-1}" '$2 == cell {print $4}'
    fi
}

# The extra of this service holding the Python driver of the URLs
# devstack's database_connection_url writes for DATABASE_TYPE: "mysql"
# (PyMySQL, mysql+pymysql://) or "postgresql" (psycopg 3, which
# SQLAlchemy 2.1 loads for devstack's bare postgresql://); none on a
# node without a database (a compute node of a multi-node devstack).
function _scheduler_database_extra {
    case "${DATABASE_TYPE:-}" in
        mysql|postgresql)
            echo "$DATABASE_TYPE"
            ;;
    esac
}

# setup_package, not setup_develop: devstack's setup_develop first
# reads the package name from $SCHEDULER_DIR/setup.cfg with awk, which
# fails, under stack.sh's errexit, on this project (pyproject.toml
# only), to take the package out of upper-constraints.txt, which does
# not list it.  The rest is the same "pip install -e DIR[EXTRA]".
function install_scheduler {
    setup_package "$SCHEDULER_DIR" -e "$(_scheduler_database_extra)"
}

function configure_scheduler {
    local cell_uuid

    _scheduler_check_mode
    sudo install -d -o "$STACK_USER" "$SCHEDULER_CONF_DIR"
    mkdir -p "$(dirname "$SCHEDULER_LOG_FILE")"
    rm -f "$SCHEDULER_CONF"

    iniset "$SCHEDULER_CONF" DEFAULT debug "$ENABLE_DEBUG_LOG_LEVEL"
    iniset "$SCHEDULER_CONF" DEFAULT host "$HOSTNAME"
    iniset "$SCHEDULER_CONF" DEFAULT log_file "$SCHEDULER_LOG_FILE"
    iniset "$SCHEDULER_CONF" DEFAULT transport_url "$(get_transport_url)"
    iniset "$SCHEDULER_CONF" oslo_messaging_notifications driver messagingv2
    iniset "$SCHEDULER_CONF" oslo_messaging_notifications transport_url \
        "$(get_notification_url)"
    iniset "$SCHEDULER_CONF" scheduler workers "$SCHEDULER_WORKERS"
    # Its own database, in both modes (claims; in standalone mode the
    # compute nodes, services and aggregates too).
    iniset "$SCHEDULER_CONF" database connection \
        "$(database_connection_url "$SCHEDULER_DB_NAME")"
    if [[ "$SCHEDULER_MODE" == "nova" ]]; then
        iniset "$SCHEDULER_CONF" api_database connection \
            "$(database_connection_url "$SCHEDULER_NOVA_API_DB")"
        iniset "$SCHEDULER_CONF" scheduler service_cell \
            "$(_scheduler_service_cell)"
    else
        cell_uuid=$(_scheduler_cell_uuid)
        if [[ -n "$cell_uuid" ]]; then
            iniset "$SCHEDULER_CONF" scheduler cell_uuid "$cell_uuid"
        fi
    fi
    if [[ -n "$SCHEDULER_ENABLED_FILTERS" ]]; then
        iniset "$SCHEDULER_CONF" filter_scheduler enabled_filters \
            "${SCHEDULER_ENABLED_FILTERS// /,}"
    fi
}

# The size of the file system holding Nova's instances, in GiB.
function _scheduler_disk_gb {
    local path=${SCHEDULER_HOST_DISK_PATH:-${NOVA_INSTANCES_PATH:-$DEST}}
    while [[ ! -d "$path" && "$path" != "/" && "$path" != "." ]]; do
        path=$(dirname "$path")
    done
    df -P -k "$path" | awk 'NR == 2 {print int($2 / 1048576)}'
}

# Standalone mode: register this node's nova-compute host, sized as the
# hypervisor is, in the scheduler's database.
function register_scheduler_host {
    local vcpus memory_mb disk_gb
    local -a args

    if ! is_service_enabled n-cpu; then
        echo "scheduler: n-cpu does not run here: no host registered"
        return 0
    fi
    vcpus=${SCHEDULER_HOST_VCPUS:-$(nproc)}
    memory_mb=${SCHEDULER_HOST_MEMORY_MB:-$(awk \
        '$1 == "MemTotal:" {print int($2 / 1024)}' /proc/meminfo)}
    disk_gb=${SCHEDULER_HOST_DISK_GB:-$(_scheduler_disk_gb)}
    args=(host add "$SCHEDULER_COMPUTE_HOST" --vcpus "$vcpus"
        --memory-mb "$memory_mb" --disk-gb "$disk_gb"
        --hypervisor-type "$SCHEDULER_HYPERVISOR_TYPE"
        --cpu-arch "$(uname -m)")
    if [[ -n "${HOST_IP:-}" ]]; then
        args+=(--host-ip "$HOST_IP")
    fi
    _scheduler_manage "${args[@]}"
}

function init_scheduler {
    recreate_database "$SCHEDULER_DB_NAME"
    _scheduler_manage db sync
    if [[ "$SCHEDULER_MODE" == "standalone" ]]; then
        register_scheduler_host
    fi
}

# n-sch is disabled by devstack/settings, so devstack does not start
# it; stop a unit an earlier stack.sh left running, which would take
# half of the "scheduler" topic's requests.
function _scheduler_stop_nova_scheduler {
    stop_process n-sch
    if _scheduler_systemctl is-active --quiet devstack@n-sch.service; then
        _scheduler_systemctl stop devstack@n-sch.service
        _scheduler_systemctl disable devstack@n-sch.service
    fi
}

function start_scheduler {
    _scheduler_stop_nova_scheduler
    if [[ "$SCHEDULER_MODE" == "standalone" ]]; then
        # Up now (registered at post-config, maybe longer ago than
        # service_down_time), then every SCHEDULER_HEARTBEAT_INTERVAL
        # seconds from the devstack@scheduler-heartbeat loop.
        _scheduler_manage host heartbeat --all
        run_process scheduler-heartbeat "/bin/bash -c 'while true; do \
$SCHEDULER_BIN_DIR/scheduler-manage --config-file $SCHEDULER_CONF \
host heartbeat --all; sleep $SCHEDULER_HEARTBEAT_INTERVAL; done'"
    fi
    run_process scheduler \
        "$SCHEDULER_BIN_DIR/scheduler-service --config-file $SCHEDULER_CONF"
}

function stop_scheduler {
    stop_process scheduler
    stop_process scheduler-heartbeat
}

# clean.sh runs after "unstack.sh --all", which stops the database
# server: then the drop fails, and devstack's cleanup_database removes
# the server's data anyway.
function _scheduler_drop_database {
    local sql="DROP DATABASE IF EXISTS $SCHEDULER_DB_NAME"
    case "${DATABASE_TYPE:-}" in
        mysql)
            mysql -u"$DATABASE_USER" -p"$DATABASE_PASSWORD" \
                -h"${MYSQL_HOST:-$DATABASE_HOST}" -e "$sql;"
            ;;
        postgresql)
            psql -h"$DATABASE_HOST" -U"$DATABASE_USER" -dtemplate1 -c "$sql"
            ;;
        *)
            return 1
            ;;
    esac
}

function cleanup_scheduler {
    if ! _scheduler_drop_database; then
        warn $LINENO "could not drop the database $SCHEDULER_DB_NAME"
    fi
    sudo rm -rf "$SCHEDULER_CONF_DIR"
    sudo rm -f "$SCHEDULER_LOG_FILE"
}

if is_service_enabled scheduler; then
    SCHEDULER_BIN_DIR=$(get_python_exec_prefix)
    if [[ "${1:-}" == "stack" && "${2:-}" == "install" ]]; then
        echo_summary "Installing scheduler"
        install_scheduler
    elif [[ "${1:-}" == "stack" && "${2:-}" == "post-config" ]]; then
        echo_summary "Configuring scheduler ($SCHEDULER_MODE mode)"
        configure_scheduler
        init_scheduler
    elif [[ "${1:-}" == "stack" && "${2:-}" == "extra" ]]; then
        echo_summary "Starting scheduler"
        start_scheduler
    fi
    if [[ "${1:-}" == "unstack" ]]; then
        stop_scheduler
    fi
    if [[ "${1:-}" == "clean" ]]; then
        cleanup_scheduler
    fi
fi
