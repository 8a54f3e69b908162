#!/usr/bin/env bash
# The whole test suite, as `make test` runs it: the parallel part, then the solo part
# (chapter 08 alone, then two lanes side by side: see the end of this script).
#
# Why a script and not two make lines: while the parallel part runs, the lab image that
# only the solo part needs is built beside it. The parallel part mostly waits on Kafka's
# timeouts (a cold run used ~0.6 of the 2 cores on average), and a cold lab image is
# minutes of CPU (debootstrap, a bundle of wheels, two docker builds): done in the
# solo part it was the longest thing there, done here it overlaps with the waiting.
# The solo part's fixture then finds the image up to date (the image's label records its
# inputs), or builds it itself if the build beside failed; either way it says so.
#
# The build starts even before the set-up (SETUP, e.g. `make setup lint`): its first
# part (the engine, debootstrap, the Debian base image) needs neither the venv nor the
# jars, and the set-up leaves most of a core idle (pip, downloads); a cold run's
# debootstrap moves out of the parallel part's busiest minutes. The image itself (its
# offline bundle is made of the venv's wheels and the cache's jars) follows the set-up.
#
#   [SETUP="make setup lint"] scripts/test-suite.sh PYTHON WORKERS [PYTEST ARGS...]
# With pytest arguments (a narrowed run), nothing is built beside: the run may not need it.
# DELIVERYLAB_PREBUILD=0 turns the build beside off.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 PYTHON WORKERS [PYTEST ARGS...]" >&2; exit 2; }
PY="$1"
WORKERS="$2"
shift 2

mkdir -p build
base_pid=""
prebuild_pid=""
lane_pid=""
stop_beside() {
    # Nothing outlives the suite: the build beside runs in process groups of its own; the
    # solo part's background lane is interrupted as Ctrl-C would (its fixtures then stop
    # their hubs and containers and remove the students' users) and waited for.
    for pid in $base_pid $prebuild_pid; do kill -TERM -- "-$pid" 2>/dev/null; done
    base_pid=""
    prebuild_pid=""
    if [ -n "$lane_pid" ]; then
        kill -INT "$lane_pid" 2>/dev/null
        wait "$lane_pid" 2>/dev/null
        lane_pid=""
    fi
}
trap stop_beside EXIT
trap 'exit 130' INT  # after the foreground pytest has torn down; then stop_beside
trap 'exit 143' TERM

lock="${TMPDIR:-/tmp}/deliverylab-tests-docker.lock"  # the docker fixtures' lock (conftest)
if [ $# -eq 0 ] && [ "${DELIVERYLAB_PREBUILD:-1}" != 0 ]; then
    # The engine and debootstrap under the fixtures' lock (two apt-gets or two dockerds
    # must not race); the base and the image outside it, so the parallel part's broker
    # image and containers never wait for them. --close: the lock's descriptor is not
    # handed to the command, or the dockerd it starts would hold the lock for its whole
    # life (a cold CI run's docker tests waited 1800 s on it).
    setsid bash -c "
        flock --close '$lock' bash -c 'bash docker/engine.sh && { command -v debootstrap >/dev/null \
            || [ \"\$(id -u)\" != 0 ] || DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq debootstrap >/dev/null; }' \
        && bash docker/lab-image.sh --base" >build/prebuild.log 2>&1 </dev/null &
    base_pid=$!
    echo "test suite: building the lab image beside the set-up and the parallel part (log: build/prebuild.log)"
fi

if [ -n "${SETUP:-}" ]; then
    $SETUP || exit $?
fi

if [ -n "$base_pid" ]; then
    # The image once its base is made (or failed: then this fails too, and the solo
    # part's fixture builds it itself and says why).
    setsid bash -c "while kill -0 $base_pid 2>/dev/null; do sleep 1; done
        PYTHON='$PY' bash docker/lab-image.sh" >>build/prebuild.log 2>&1 </dev/null &
    prebuild_pid=$!
fi

# A module at a time to whichever worker is free (its module fixtures then start once, not
# once per worker), a chapter or a calibration alone, in conftest's order (the longest
# first): tests/scheduling.py. --no-loadscope-reorder: xdist would otherwise put the
# modules with the most tests first, the unit tests.
# The whole suite's collection also writes which modules hold the solo part's tests
# (tests/conftest.py, SOLO_LIST): each pytest of the solo part then collects only those.
solo_list=""
if [ $# -eq 0 ]; then
    solo_list=build/solo-tests.txt
    rm -f "$solo_list"
fi
DELIVERYLAB_SOLO_LIST="$solo_list" \
    "$PY" -m pytest -n "$WORKERS" --dist loadscope --no-loadscope-reorder -m "not solo" "$@"
code=$?
[ $code -eq 5 ] && code=0  # "no test selected": the arguments picked none of this part
if [ $code -ne 0 ]; then
    exit $code
fi

if [ -n "$prebuild_pid" ]; then
    t0=$SECONDS
    if wait "$prebuild_pid"; then
        echo "test suite: lab image built beside ($(tail -1 build/prebuild.log)); waited $((SECONDS - t0)) s for it"
    else
        echo "test suite: the build beside failed; the solo part builds the image itself:" \
             "$(tail -1 build/prebuild.log)"
    fi
    prebuild_pid=""
fi

# The solo part (the tests marked `solo`): first those also marked `alone`, chapter 08's
# throughput ratios, with nothing beside them (the build beside is done: waited for above);
# 08 goes first because the course book reads its run. Then the others in two lanes side
# by side, one pytest process per lane marker, each lane's tests one at a time. Which test
# shares a lane with which, and why, is tests/lanes.py: what runs on the Docker engine and
# the course book in one, the three-student hub and the /tmp comparison in the other. Run
# one after another (a cold run of stop 41) these took 559 s with the CPU half idle.
# The Docker lane runs in the background into a log, printed after the host lane's live
# output. A failure of 08 does not stop the lanes: the first failing part's code is the
# suite's. TEST_WORKERS=0 runs the lanes one after the other.
solo_part() {
    "$PY" -m pytest "$@"
    local c=$?
    [ $c -eq 5 ] && c=0  # "no test selected"
    [ $code -ne 0 ] || code=$c
}
# With the parallel part's list, each pytest below is given the modules it names for its
# kind (a test path has no space: split on purpose), and none runs for a kind it does not
# name (pytest given no path would collect the whole suite to select nothing); without a
# list (a narrowed run), each is given the run's own arguments.
has_list() { [ -n "$solo_list" ] && [ -f "$solo_list" ]; }
modules_of() { awk -F'\t' -v kind="$1" '$1 == kind { print $2 }' "$solo_list"; }
solo_kind() {  # KIND [ARGS...]: that kind's tests, in the foreground
    local kind=$1
    shift
    if has_list; then
        local modules
        modules=$(modules_of "$kind")
        [ -n "$modules" ] || return 0
        # shellcheck disable=SC2086
        solo_part -m "solo and $kind" $modules
    else
        solo_part -m "solo and $kind" "$@"
    fi
}
solo_kind alone "$@"
docker_modules=""
if has_list; then
    docker_modules=$(modules_of lane_docker)
fi
if [ "$WORKERS" = 0 ] || { has_list && [ -z "$docker_modules" ]; }; then
    solo_kind lane_host "$@"
    solo_kind lane_docker "$@"
else
    lane_log=build/solo-lane-docker.log
    # SIGINT back to its default (a background command ignores it): pytest tears down on
    # it, and stop_beside sends it. A session of its own: a Ctrl-C at the terminal reaches
    # the lane only through stop_beside, once.
    (
        trap - INT
        if has_list; then
            # shellcheck disable=SC2086
            exec setsid "$PY" -m pytest -m "solo and lane_docker" $docker_modules
        fi
        exec setsid "$PY" -m pytest -m "solo and lane_docker" "$@"
    ) >"$lane_log" 2>&1 </dev/null &
    lane_pid=$!
    echo "test suite: the solo part's Docker lane runs beside this one (log: $lane_log)"
    solo_kind lane_host "$@"
    echo "test suite: waiting for the Docker lane; its report:"
    wait "$lane_pid"
    c=$?
    lane_pid=""
    cat "$lane_log"
    [ $c -eq 5 ] && c=0
    [ $code -ne 0 ] || code=$c
fi
exit $code
