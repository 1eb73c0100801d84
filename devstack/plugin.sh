#!/bin/bash
# devstack plugin for the standalone scheduler service.
#
# Phases: install the package, write /etc/scheduler/scheduler.conf from
# devstack's RabbitMQ and database settings, sync the schema, run
# "scheduler-service" as the devstack service "scheduler".

function install_scheduler {
    setup_develop $SCHEDULER_DIR
}

function configure_scheduler {
    sudo install -d -o $STACK_USER $SCHEDULER_CONF_DIR
    rm -f $SCHEDULER_CONF
    iniset $SCHEDULER_CONF DEFAULT debug $ENABLE_DEBUG_LOG_LEVEL
    iniset $SCHEDULER_CONF DEFAULT host $HOSTNAME
    iniset $SCHEDULER_CONF DEFAULT transport_url $(get_transport_url)
    iniset $SCHEDULER_CONF scheduler workers $SCHEDULER_WORKERS
    if [[ "$SCHEDULER_USE_NOVA_DB" == "True" ]]; then
        iniset $SCHEDULER_CONF database connection \
            $(database_connection_url nova_cell1)
    else
        iniset $SCHEDULER_CONF database connection \
            $(database_connection_url scheduler)
    fi
    if [[ -n "$SCHEDULER_ENABLED_FILTERS" ]]; then
        iniset $SCHEDULER_CONF filter_scheduler enabled_filters \
            $SCHEDULER_ENABLED_FILTERS
    fi
    iniset $SCHEDULER_CONF oslo_messaging_notifications driver messagingv2
}

function init_scheduler {
    if [[ "$SCHEDULER_USE_NOVA_DB" != "True" ]]; then
        recreate_database scheduler
        $SCHEDULER_BIN_DIR/scheduler-manage --config-file $SCHEDULER_CONF \
            db sync
    fi
}

function start_scheduler {
    run_process scheduler \
        "$SCHEDULER_BIN_DIR/scheduler-service --config-file $SCHEDULER_CONF"
}

function stop_scheduler {
    stop_process scheduler
}

function cleanup_scheduler {
    sudo rm -rf $SCHEDULER_CONF_DIR
}

SCHEDULER_BIN_DIR=$(get_python_exec_prefix)

if is_service_enabled scheduler; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing scheduler"
        install_scheduler
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring scheduler"
        configure_scheduler
        init_scheduler
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Starting scheduler"
        start_scheduler
    fi
    if [[ "$1" == "unstack" ]]; then
        stop_scheduler
    fi
    if [[ "$1" == "clean" ]]; then
        cleanup_scheduler
    fi
fi
