#!/bin/bash
# Stand-ins of the devstack functions devstack/plugin.sh and
# devstack/settings call, for tests/unit/devstack/test_plugin.py.
#
# Each records its call in $STUB_LOG, one JSON list [NAME, ARG...] a line; iniset
# writes a real INI file (python3 configparser), get_python_exec_prefix
# names $STUB_BIN (where the test puts its scheduler-manage stand-in),
# and sudo runs its command without privileges.  database_connection_url
# builds the URLs devstack builds (devstack master, commit 493835a6 of
# 2026-07-17; see test_plugin.py's docstring).

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

# The SQLAlchemy URL of database $1, shaped as devstack's
# database_connection_url_$DATABASE_TYPE shapes it (lib/databases/mysql,
# lib/databases/postgresql): the driver of get_database_type_*, then
# $DATABASE_USER:$DATABASE_PASSWORD@$DATABASE_HOST (BASE_SQL_CONN of
# define_database_baseurl), then the backend's query string: MySQL
# "?charset=utf8", with "&plugin=dbcounter" (devstack's SQLAlchemy
# plugin counting queries) when MYSQL_GATHER_PERFORMANCE (stackrc
# default True) and the mysql service runs here; PostgreSQL
# "?client_encoding=utf8" on a bare postgresql:// (no driver named).
function database_connection_url {
    local base query driver
    case "${DATABASE_TYPE:-}" in
        mysql)
            driver=mysql
            if [[ "${MYSQL_DRIVER:-PyMySQL}" == "PyMySQL" ]]; then
                driver=mysql+pymysql
            fi
            query="?charset=utf8"
            if [[ "$(trueorfalse True MYSQL_GATHER_PERFORMANCE)" == "True" ]] \
                    && is_service_enabled mysql; then
                query+="&plugin=dbcounter"
            fi
            ;;
        postgresql)
            driver=postgresql
            query="?client_encoding=utf8"
            ;;
        *)
            die $LINENO "database_connection_url: no DATABASE_TYPE"
            ;;
    esac
    base=$driver://$DATABASE_USER:$DATABASE_PASSWORD@$DATABASE_HOST
    base=${BASE_SQL_CONN:-$base}
    echo "$base/$1$query"
}

function recreate_database {
    _stub_record recreate_database "$@"
}

# devstack's setup_develop DIR [EXTRAS] reads the package name from
# DIR/setup.cfg with awk before it looks at pyproject.toml: stack.sh's
# errexit ends the run when DIR has no setup.cfg.
function setup_develop {
    _stub_record setup_develop "$@"
    if [[ ! -f "$1/setup.cfg" ]]; then
        die $LINENO "awk: cannot open file \`$1/setup.cfg' for reading"
    fi
}

# setup_package DIR FLAGS [EXTRAS]: pip install FLAGS DIR[EXTRAS].
function setup_package {
    _stub_record setup_package "$@"
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
