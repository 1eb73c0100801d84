#!/bin/bash
# Prepare a machine to run the test suite.  Idempotent; run from anywhere.
#
# 1. Installs the server packages from bindep.txt ("test platform:dpkg"
#    entries: RabbitMQ, PostgreSQL, MariaDB) with apt-get, if any of the
#    server binaries is missing.  Needs root (or password-less sudo) only
#    in that case.  The system-wide services are NOT used by the tests and
#    are kept stopped: the pytest fixtures start private servers on
#    127.0.0.1 in temporary directories.
# 2. Creates the virtualenv of Nova the Nova-caller functional tests
#    drive the service with (tests/functional/test_nova_caller.py):
#    nova==$SCHEDULER_NOVA_VERSION (default 34.0.0) from PyPI, in
#    $SCHEDULER_NOVA_VENV (default ~/.cache/scheduler-tests/nova-<version>),
#    unless a venv there already records that version (its
#    scheduler-nova-version file).  The venv's python is
#    $SCHEDULER_NOVA_PYTHON (default $PYTHON; Nova 34 needs 3.11 or later).
#    SCHEDULER_SKIP_NOVA_VENV=1 skips this step (the tests then fail, or
#    skip under SCHEDULER_TEST_SKIP_NOVA=1).  Likewise the virtualenv of
#    the real Placement the Placement tests run under gunicorn:
#    openstack-placement==$SCHEDULER_PLACEMENT_VERSION (default 16.0.0) in
#    $SCHEDULER_PLACEMENT_VENV (default
#    ~/.cache/scheduler-tests/placement-<version>);
#    SCHEDULER_SKIP_PLACEMENT_VENV=1 skips it.  The Nova venv also holds
#    gunicorn, which serves Nova's API in tests/functional/test_real_nova.py;
#    that test's image service is Glance from PyPI, in a venv of its own too:
#    glance==$SCHEDULER_GLANCE_VERSION (default 33.0.0) with gunicorn and
#    psycopg2-binary in $SCHEDULER_GLANCE_VENV (default
#    ~/.cache/scheduler-tests/glance-<version>);
#    SCHEDULER_SKIP_GLANCE_VENV=1 skips it.
# 3. Installs this repository's two distributions editable: the service
#    (openstack-standalone-scheduler) with its test extra, and the tools
#    (openstack-standalone-scheduler-tools, in scheduler-tools/): python3
#    -m pip install -e '.[test]' -e ./scheduler-tools, since the tests
#    run scheduler-replay and scheduler-bench too; unless that is
#    already done for the current pyproject.toml files.  SCHEDULER_SKIP_PIP_INSTALL=1
#    skips this step (tox does its own install).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
PYTHON=${PYTHON:-python3}

log() { echo "test-setup: $*" >&2; }

have_rabbitmq() {
    [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] ||
        compgen -G '/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmq-server' >/dev/null
}

have_postgresql() {
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

have_mariadb() {
    { command -v mariadbd || command -v mysqld ||
          [ -x /usr/sbin/mariadbd ] || [ -x /usr/sbin/mysqld ]; } >/dev/null &&
        { command -v mariadb-install-db || command -v mysql_install_db; } >/dev/null
}

# Package names from bindep.txt: lines whose [profile platform] list
# contains "test" and "platform:dpkg" (or has no brackets at all).
bindep_packages() {
    sed -e 's/#.*//' bindep.txt | awk '
        NF == 0 { next }
        {
            if (match($0, /\[[^]]*\]/)) {
                tags = substr($0, RSTART + 1, RLENGTH - 2)
                n = split(tags, t, /[ \t]+/)
                test = 0; dpkg = 0
                for (i = 1; i <= n; i++) {
                    if (t[i] == "test") test = 1
                    if (t[i] == "platform:dpkg") dpkg = 1
                }
                if (test && dpkg) print $1
            } else {
                print $1
            }
        }'
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo -n "$@"
    else
        log "need root to run: $*"
        log "re-run this script as root (or install: $(bindep_packages | tr '\n' ' '))"
        exit 1
    fi
}

# Stop system-wide services the packages may have started anyway (only
# called right after we installed them), so nothing holds 5672/5432/3306.
# Targeted: only services whose own pid file / cluster says they run.
stop_system_services() {
    local systemd=0
    if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
        systemd=1
    fi
    if command -v pg_lsclusters >/dev/null; then
        pg_lsclusters --no-header 2>/dev/null | while read -r ver name _port status _rest; do
            case "$status" in
                online*)
                    log "stopping system PostgreSQL cluster $ver/$name"
                    as_root pg_ctlcluster "$ver" "$name" stop || true ;;
            esac
        done
    fi
    local svc pidfile
    for svc in rabbitmq-server:/run/rabbitmq/pid mariadb:/run/mysqld/mysqld.pid; do
        pidfile=${svc#*:}
        svc=${svc%%:*}
        if [ "$systemd" = 1 ]; then
            if systemctl is-active --quiet "$svc"; then
                log "stopping system service $svc"
                as_root systemctl stop "$svc" || true
            fi
        elif [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
            log "stopping system service $svc"
            as_root service "$svc" stop || true
        fi
    done
}

install_packages() {
    local pkgs
    pkgs=$(bindep_packages | tr '\n' ' ')
    if ! command -v apt-get >/dev/null; then
        log "apt-get not found; install these packages by hand: $pkgs"
        exit 1
    fi
    log "installing: $pkgs"
    # Keep the package scripts from starting the system services: a
    # policy-rc.d that denies everything (honoured by invoke-rc.d and
    # deb-systemd-invoke), for the duration of the install only.
    local policy=/usr/sbin/policy-rc.d saved=""
    if [ -e "$policy" ]; then
        saved=$(mktemp)
        as_root cp -p "$policy" "$saved"
    fi
    as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
    local rc=0
    {
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
            as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
                --no-install-recommends $pkgs
    } || rc=$?
    if [ -n "$saved" ]; then
        as_root cp -p "$saved" "$policy"
        as_root rm -f "$saved"
    else
        as_root rm -f "$policy"
    fi
    [ "$rc" -eq 0 ] || { log "apt-get failed ($rc)"; exit "$rc"; }
    stop_system_services
}

have_openssl_and_curl() {
    command -v openssl >/dev/null && command -v curl >/dev/null
}

if have_rabbitmq && have_postgresql && have_mariadb && have_openssl_and_curl; then
    log "RabbitMQ, PostgreSQL, MariaDB, openssl and curl are installed"
else
    install_packages
    if ! { have_rabbitmq && have_postgresql && have_mariadb &&
               have_openssl_and_curl; }; then
        log "server binaries still missing after installing packages"
        exit 1
    fi
fi
command -v shellcheck >/dev/null || (as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends shellcheck) || log "shellcheck not installed: tests/unit/devstack skips its check"

# --- Nova and Placement, the test parties, in venvs of their own ----------

VENV_PYTHON=${SCHEDULER_NOVA_PYTHON:-$PYTHON}

# make_venv NAME DIR VERSION CHECK PACKAGE...: a fresh venv in DIR with
# the PACKAGEs; CHECK (Python code) must run in it; its stamp (VERSION in
# DIR/scheduler-NAME-version, which the tests read) is written last, so
# an interrupted run starts over.  Without ensurepip (Debian's python3
# without python3-venv) the venv is made without pip and filled by our
# pip.  (Called in a condition, where "set -e" does not apply: each step
# checks itself.)
make_venv() {
    local name=$1 dir=$2 version=$3 check=$4
    shift 4
    rm -rf "$dir" && mkdir -p "$(dirname "$dir")" || return 1
    local pip=("$dir/bin/python" -m pip)
    if ! "$VENV_PYTHON" -m venv "$dir" >/dev/null 2>&1; then
        rm -rf "$dir" && "$VENV_PYTHON" -m venv --without-pip "$dir" ||
            return 1
        pip=("$PYTHON" -m pip --python "$dir/bin/python")
    fi
    log "installing $* into $dir"
    PIP_ROOT_USER_ACTION=ignore "${pip[@]}" install -q \
        --disable-pip-version-check --no-input "$@" &&
        "$dir/bin/python" -c "$check" &&
        echo "$version" > "$dir/scheduler-$name-version"
}

# venv_is_current NAME DIR VERSION CHECK: DIR holds a complete venv of
# VERSION in which CHECK runs.
venv_is_current() {
    local stamp=$2/scheduler-$1-version
    [ -x "$2/bin/python" ] && [ -f "$stamp" ] &&
        [ "$(cat "$stamp")" = "$3" ] &&
        "$2/bin/python" -c "$4" >/dev/null 2>&1
}

# prepare_venv NAME SKIP_VARIABLE DIR VERSION CHECK PACKAGE...: the venv
# of NAME, unless the variable named SKIP_VARIABLE is 1 or the venv is
# current already.
prepare_venv() {
    local name=$1 skip=$2 dir=$3 version=$4 check=$5
    shift 5
    if [ "${!skip:-0}" = 1 ]; then
        log "$skip=1: not preparing the $name venv"
    elif venv_is_current "$name" "$dir" "$version" "$check"; then
        log "$name $version venv is ready in $dir"
    elif ! make_venv "$name" "$dir" "$version" "$check" "$@"; then
        log "could not install $name $version into $dir"
        exit 1
    fi
}

CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/scheduler-tests

# Nova, the caller and database author of the Nova tests.
NOVA_VERSION=${SCHEDULER_NOVA_VERSION:-34.0.0}
prepare_venv nova SCHEDULER_SKIP_NOVA_VENV \
    "${SCHEDULER_NOVA_VENV:-$CACHE/nova-$NOVA_VERSION}" "$NOVA_VERSION" \
    'import nova.scheduler.client.query, psycopg2, gunicorn' \
    "nova==$NOVA_VERSION" psycopg2-binary gunicorn

# Placement, served by gunicorn, for the Placement tests (its WSGI module
# reads its configuration on import: only looked up here).
PLACEMENT_VERSION=${SCHEDULER_PLACEMENT_VERSION:-16.0.0}
prepare_venv placement SCHEDULER_SKIP_PLACEMENT_VENV \
    "${SCHEDULER_PLACEMENT_VENV:-$CACHE/placement-$PLACEMENT_VERSION}" \
    "$PLACEMENT_VERSION" \
    'import importlib.util, sys, psycopg2
sys.exit(importlib.util.find_spec("placement.wsgi.api") is None)' \
    "openstack-placement==$PLACEMENT_VERSION" gunicorn psycopg2-binary

# Glance, the image service of the real Nova control plane
# (tests/functional/test_real_nova.py), served by gunicorn.
GLANCE_VERSION=${SCHEDULER_GLANCE_VERSION:-33.0.0}
prepare_venv glance SCHEDULER_SKIP_GLANCE_VENV \
    "${SCHEDULER_GLANCE_VENV:-$CACHE/glance-$GLANCE_VERSION}" \
    "$GLANCE_VERSION" \
    'import glance.common.wsgi_app, glance_store, gunicorn, psycopg2' \
    "glance==$GLANCE_VERSION" gunicorn psycopg2-binary

# --- Python side -----------------------------------------------------------

if [ "${SCHEDULER_SKIP_PIP_INSTALL:-0}" = 1 ]; then
    exit 0
fi

# The distributions of this repository: name, directory (relative to
# the repository), extras the tests need.
DISTRIBUTIONS='[["openstack-standalone-scheduler", ".", ["test"]],
 ["openstack-standalone-scheduler-tools", "scheduler-tools", []]]'

# Exit 0 if both distributions are installed editable from this repo,
# each with metadata built from its current pyproject.toml (stamp in the
# dist-info) and all its requirements, the test extra included,
# satisfied.  Exit 1 otherwise.
install_is_current() {
    (cd / && "$PYTHON" - "$REPO_ROOT" "$DISTRIBUTIONS" <<'PY'
import hashlib, importlib.metadata as md, json, os, sys
repo, dists = sys.argv[1], json.loads(sys.argv[2])
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
try:
    for name, where, extras in dists:
        source = os.path.normpath(os.path.join(repo, where))
        dist = md.distribution(name)
        url = json.loads(dist.read_text("direct_url.json") or "{}")
        if url.get("url") != "file://" + source or not url.get(
                "dir_info", {}).get("editable"):
            sys.exit(1)
        with open(os.path.join(source, "pyproject.toml"), "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        if (dist.read_text("SCHEDULER_TEST_SETUP") or "").strip() != want:
            sys.exit(1)
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker and not any(req.marker.evaluate({"extra": extra})
                                      for extra in extras):
                continue
            have = md.version(req.name)
            if not req.specifier.contains(have, prereleases=True):
                sys.exit(1)
except (md.PackageNotFoundError, OSError, ValueError):
    sys.exit(1)
PY
    )
}

write_stamp() {
    (cd / && "$PYTHON" - "$REPO_ROOT" "$DISTRIBUTIONS" <<'PY'
import hashlib, importlib.metadata as md, json, os, sys
repo, dists = sys.argv[1], json.loads(sys.argv[2])
for name, where, _extras in dists:
    path = getattr(md.distribution(name), "_path", None)
    if path is None:
        continue
    with open(os.path.join(repo, where, "pyproject.toml"), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.join(str(path), "SCHEDULER_TEST_SETUP"), "w") as f:
        f.write(digest + "\n")
PY
    ) || true
}

if install_is_current; then
    log "python package and test requirements are up to date"
    exit 0
fi

# Exit 0 if this repo is installed editable under the distribution's
# former name, "scheduler" (its entry points would be registered twice),
# after removing our stamp from its dist-info (pip does not know the
# file, and would leave the directory behind).  A "scheduler" installed
# from anywhere else is left alone.
old_name_installed() {
    (cd / && "$PYTHON" - "$REPO_ROOT" <<'PY'
import importlib.metadata as md, json, os, sys
try:
    dist = md.distribution("scheduler")
    url = json.loads(dist.read_text("direct_url.json") or "{}")
except (md.PackageNotFoundError, OSError, ValueError):
    sys.exit(1)
if url.get("url") != "file://" + sys.argv[1]:
    sys.exit(1)
path = getattr(dist, "_path", None)
if path is not None:
    try:
        os.unlink(os.path.join(str(path), "SCHEDULER_TEST_SETUP"))
    except OSError:
        pass
PY
    )
}

pip_flags=(-q --disable-pip-version-check --no-input)
# A distribution Python (PEP 668 "externally managed") outside a venv
# refuses pip installs; this is a throwaway test machine, so override.
if "$PYTHON" -c 'import sys, sysconfig, os
sys.exit(0 if sys.prefix == sys.base_prefix and os.path.exists(
    os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else 1)'
then
    pip_flags+=(--break-system-packages)
fi
if old_name_installed; then
    log "$PYTHON -m pip uninstall -y scheduler (this repository's former name)"
    PIP_ROOT_USER_ACTION=ignore "$PYTHON" -m pip uninstall -y "${pip_flags[@]}" scheduler
fi
# setuptools' metadata of the former name, left in the tree by its
# editable install: on sys.path from here, it would add the entry points
# a second time.
rm -rf "$REPO_ROOT/scheduler.egg-info"
pip_args=(install "${pip_flags[@]}" -e ".[test]" -e ./scheduler-tools)
log "$PYTHON -m pip ${pip_args[*]}"
PIP_ROOT_USER_ACTION=ignore "$PYTHON" -m pip "${pip_args[@]}"
write_stamp
