#!/bin/bash
# Stand-ins of the devstack functions devstack/plugin.sh and
# devstack/settings call, for tests/unit/devstack/test_plugin.py.
#
# Each records its call in $STUB_LOG, one JSON list [NAME, ARG...] a line; iniset
# writes a real INI file (python3 configparser), get_python_exec_prefix
# names $STUB_BIN (where the test puts its scheduler-manage stand-in),
# and sudo runs its command without privileges.

: "${STUB_LOG:?}" "${STUB_BIN:?}"

function _stub_record {
    local arg out="" sep=""
    for arg in "$@"; do
        arg=${arg//\\/\\\\}
        arg=${arg//\"/\\\"}
        arg=${arg//$'\t'/\\t}
        arg=${arg//$'\n'/\\n}
        out+="$sep\"$arg\""
        sep=", "
    done
    echo "[$out]" >> "$STUB_LOG"
}

function die {
    _stub_record die "$@"
    echo "die: $*" >&2
    exit 1
}

function warn {
    _stub_record warn "$@"
}

function echo_summary {
    _stub_record echo_summary "$@"
}

function trueorfalse {
    local default=$1
    case "${!2:-}" in
        1|[yY]es|YES|[tT]rue|TRUE) echo True ;;
        0|[nN]o|NO|[fF]alse|FALSE) echo False ;;
        *) echo "$default" ;;
    esac
}

function is_service_enabled {
    local service
    for service in "$@"; do
        if [[ ",$ENABLED_SERVICES," == *",$service,"* ]]; then
            return 0
        fi
    done
    return 1
}

function enable_service {
    local service
    _stub_record enable_service "$@"
    for service in "$@"; do
        if ! is_service_enabled "$service"; then
            ENABLED_SERVICES+=",$service"
        fi
    done
}

function disable_service {
    local service
    _stub_record disable_service "$@"
    for service in "$@"; do
        ENABLED_SERVICES=",$ENABLED_SERVICES,"
        ENABLED_SERVICES=${ENABLED_SERVICES//,$service,/,}
        ENABLED_SERVICES=${ENABLED_SERVICES#,}
        ENABLED_SERVICES=${ENABLED_SERVICES%,}
    done
}

function iniset {
    local sudo=""
    if [[ "$1" == "-sudo" ]]; then
        sudo="-sudo"
        shift
    fi
    _stub_record iniset ${sudo:+"$sudo"} "$@"
    python3 - "$@" <<'PY'
import configparser
import os
import sys

path, section, option, value = sys.argv[1:5]
parser = configparser.RawConfigParser(strict=False)
parser.optionxform = str
if os.path.exists(path):
    parser.read(path)
if section != 'DEFAULT' and not parser.has_section(section):
    parser.add_section(section)
parser.set(section, option, value)
with open(path, 'w') as f:
    parser.write(f)
PY
}

function get_python_exec_prefix {
    echo "$STUB_BIN"
}

function get_transport_url {
    echo "rabbit://stackrabbit:secret@192.0.2.10:5672/${1:-}"
}

function get_notification_url {
    echo "rabbit://stackrabbit:secret@192.0.2.10:5672/${1:-}"
}

function database_connection_url {
    echo "mysql+pymysql://root:secret@192.0.2.10/$1?charset=utf8"
}

function recreate_database {
    _stub_record recreate_database "$@"
}

function setup_develop {
    _stub_record setup_develop "$@"
}

function pip_install {
    _stub_record pip_install "$@"
}

function run_process {
    _stub_record run_process "$@"
}

function stop_process {
    _stub_record stop_process "$@"
}

function service_check {
    _stub_record service_check "$@"
}

function get_or_create_service {
    _stub_record get_or_create_service "$@"
}

function get_or_create_endpoint {
    _stub_record get_or_create_endpoint "$@"
}

function sudo {
    _stub_record sudo "$@"
    "$@"
}

function systemctl {
    _stub_record systemctl "$@"
    # No unit is active here.
    [[ "$1" != "is-active" ]]
}

function install {
    # "sudo install -d -o stack DIR": no chown here.
    local -a args=()
    while [[ $# -gt 0 ]]; do
        case "$1" in
            -o|-g) shift ;;
            *) args+=("$1") ;;
        esac
        shift
    done
    command install "${args[@]}"
}

function mysql {
    _stub_record mysql "$@"
}

function psql {
    _stub_record psql "$@"
}
