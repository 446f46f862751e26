#!/bin/sh
# rtlab in a LAVA test shell: install rtlab, measure ITERATIONS times, audit, and report
# every figure as a lava-test-case (see README.md). POSIX sh: boards run busybox.
#
# Without LAVA's helpers on PATH the test cases are printed as result-file lines
# (output/result.txt holds them either way), so the script runs by hand too.

OUTPUT="$(pwd)/output"
RESULT_FILE="${OUTPUT}/result.txt"
DB="${OUTPUT}/rtlab.db"

DURATION="5m"
LOAD=""
BUDGET=""
RT_CPUS=""
ITERATIONS="1"
BASELINE=""
PUSH_URL=""
PUSH_TOKEN=""
BINARY=""
SKIP_INSTALL="false"
MEASURE_ARGS=""
PUSH_RETRY="30s"

usage() {
    echo "Usage: $0 [-D duration] [-l load] [-b budget] [-c rt_cpus] [-i iterations]" \
        "[-x baseline] [-u push_url] [-t push_token] [-r push_retry] [-B binary] [-s true|false]" \
        "[-m measure_args]" 1>&2
    exit 2
}

while getopts ":D:l:b:c:i:x:u:t:r:B:s:m:" opt; do
    case "${opt}" in
        D) DURATION="${OPTARG}" ;;
        l) LOAD="${OPTARG}" ;;
        b) BUDGET="${OPTARG}" ;;
        c) RT_CPUS="${OPTARG}" ;;
        i) ITERATIONS="${OPTARG}" ;;
        x) BASELINE="${OPTARG}" ;;
        u) PUSH_URL="${OPTARG}" ;;
        t) PUSH_TOKEN="${OPTARG}" ;;
        r) PUSH_RETRY="${OPTARG}" ;;
        B) BINARY="${OPTARG}" ;;
        s) SKIP_INSTALL="${OPTARG}" ;;
        m) MEASURE_ARGS="${OPTARG}" ;;
        *) usage ;;
    esac
done

# Stops the job with an error LAVA shows (a test-shell failure, not a test case).
raise() {
    echo "rtlab: $1" 1>&2
    if command -v lava-test-raise >/dev/null 2>&1; then
        lava-test-raise "rtlab: $1"
    fi
    exit 1
}

# report NAME RESULT [MEASUREMENT UNITS]: one test case, to LAVA and to the result file.
report() {
    # No trailing blanks: send-to-lava.sh matches lines that end in the result.
    line="$1 $2"
    [ -n "$3" ] && line="${line} $3 $4"
    echo "${line}" >>"${RESULT_FILE}"
    if ! command -v lava-test-case >/dev/null 2>&1; then
        echo "${line}"
    elif [ -n "$3" ]; then
        lava-test-case "$1" --result "$2" --measurement "$3" --units "$4"
    else
        lava-test-case "$1" --result "$2"
    fi
}

# Reports every line of a result file rtlab wrote (NAME RESULT [MEASUREMENT UNITS]).
report_file() {
    while read -r name result measurement units; do
        [ -n "${name}" ] && report "${name}" "${result}" "${measurement}" "${units}"
    done <"$1"
}

# The static binary's architecture name for `uname -m`.
dist_arch() {
    case "$(uname -m)" in
        x86_64 | amd64) echo x86_64 ;;
        aarch64 | arm64 | armv8b) echo aarch64 ;;
        armv7* | armv8l | armhf) echo armv7 ;;
        *) uname -m ;;
    esac
}

# Puts the rtlab to run in ${RTLAB}.
install_rtlab() {
    RTLAB="${OUTPUT}/bin/rtlab"
    mkdir -p "${OUTPUT}/bin" || raise "cannot make ${OUTPUT}/bin"
    if [ "${SKIP_INSTALL}" = "true" ]; then
        RTLAB="$(command -v rtlab)" || raise "SKIP_INSTALL=true but no rtlab on PATH"
        return
    fi
    case "${BINARY}" in
        http://* | https://*)
            if command -v curl >/dev/null 2>&1; then
                curl -fsSL -o "${RTLAB}" "${BINARY}" || raise "cannot download ${BINARY}"
            else
                wget -q -O "${RTLAB}" "${BINARY}" || raise "cannot download ${BINARY}"
            fi
            ;;
        "")
            dist="../../dist/bin/rtlab-$(dist_arch)"
            if [ -f "${dist}" ]; then
                cp "${dist}" "${RTLAB}" || raise "cannot copy ${dist}"
            else
                RTLAB="$(command -v rtlab)" ||
                    raise "no ${dist} in this checkout and no rtlab on PATH: set BINARY to a path or URL"
                return
            fi
            ;;
        *)
            [ -f "${BINARY}" ] || raise "BINARY ${BINARY}: no such file"
            cp "${BINARY}" "${RTLAB}" || raise "cannot copy ${BINARY}"
            ;;
    esac
    chmod +x "${RTLAB}"
    "${RTLAB}" --version >/dev/null 2>&1 || raise "${RTLAB} does not run on $(uname -m)"
}

case "${ITERATIONS}" in
    "" | *[!0-9]* | 0 | 0* | ?????*) raise "ITERATIONS must be a whole number from 1 to 9999, not '${ITERATIONS}'" ;;
esac

rm -rf "${OUTPUT}"
mkdir -p "${OUTPUT}" || raise "cannot make ${OUTPUT}"
: >"${RESULT_FILE}"
install_rtlab
"${RTLAB}" --version

# The audit's verdict: exit 0 no finding failed, 1 one did; anything else is no verdict.
set --
[ -n "${RT_CPUS}" ] && set -- --rt-cpus "${RT_CPUS}"
"${RTLAB}" audit "$@" >"${OUTPUT}/audit.txt" 2>&1
case $? in
    0) report audit pass ;;
    1) report audit fail ;;
    *) report audit unknown ;;
esac
cat "${OUTPUT}/audit.txt"

# The runs: one result file each, stored in a store of this job's own.
runs=""
i=1
while [ "${i}" -le "${ITERATIONS}" ]; do
    set -- --duration "${DURATION}" --label "lava-iteration-${i}" --db "${DB}" -q \
        -o "${OUTPUT}/run-${i}.json"
    [ -n "${RT_CPUS}" ] && set -- "$@" --cpus "${RT_CPUS}"
    [ -n "${LOAD}" ] && set -- "$@" --load "${LOAD}"
    # shellcheck disable=SC2086 # MEASURE_ARGS is a list of options
    "${RTLAB}" measure "$@" ${MEASURE_ARGS}
    status=$?
    if [ -s "${OUTPUT}/run-${i}.json" ]; then
        runs="${runs} ${OUTPUT}/run-${i}.json"
    else
        # No result (bad options, no privileges): the run is a failed case of its own.
        report "iteration-${i}-measure" fail "${status}" exit-status
    fi
    i=$((i + 1))
done

# export_cases NAME ARGS...: rtlab export's result-file lines, every case reported; a failed
# export (exit 2: no verdict at all) is a failed case NAME.
export_cases() {
    name="$1"
    shift
    rm -f "${OUTPUT}/cases.txt"
    "${RTLAB}" export "$@" --format lava-results -o "${OUTPUT}/cases.txt"
    status=$?
    if [ -f "${OUTPUT}/cases.txt" ] && [ "${status}" -le 1 ]; then
        report_file "${OUTPUT}/cases.txt"
    else
        report "${name}" fail "${status}" exit-status
    fi
}

# Every run's figures, named iteration-N-... when there are several runs.
set --
[ -n "${BUDGET}" ] && set -- --budget "${BUDGET}"
missing=0
i=1
while [ "${i}" -le "${ITERATIONS}" ]; do
    if [ ! -s "${OUTPUT}/run-${i}.json" ]; then
        missing=$((missing + 1))
    elif [ "${ITERATIONS}" -gt 1 ]; then
        export_cases "iteration-${i}-export" "${OUTPUT}/run-${i}.json" --prefix "iteration-${i}" "$@"
    else
        export_cases export "${OUTPUT}/run-${i}.json" "$@"
    fi
    i=$((i + 1))
done

# The repeated-runs verdict over all runs; a run without a result leaves it failed.
if [ "${ITERATIONS}" -gt 2 ]; then
    if [ "${missing}" -gt 0 ]; then
        report runs-over-baseline fail
    else
        set -- --baseline
        [ -n "${BASELINE}" ] && set -- "--baseline=${BASELINE}"
        # shellcheck disable=SC2086 # the run files have no blanks: OUTPUT is made above
        "${RTLAB}" export ${runs} "$@" --format lava-results -o "${OUTPUT}/baseline.txt"
        status=$?
        if [ -f "${OUTPUT}/baseline.txt" ] && [ "${status}" -le 1 ]; then
            grep -E '^(baseline-|runs-over-baseline )' "${OUTPUT}/baseline.txt" >"${OUTPUT}/cases.txt"
            report_file "${OUTPUT}/cases.txt"
        else
            report runs-over-baseline fail "${status}" exit-status
        fi
    fi
fi

if [ -n "${PUSH_URL}" ] && [ -n "${runs}" ]; then
    # Runs the server cannot take now wait in rtlab's push queue for the next push.
    # shellcheck disable=SC2086
    RTLAB_TOKEN="${PUSH_TOKEN}" "${RTLAB}" push ${runs} --to "${PUSH_URL}" --retry-for "${PUSH_RETRY}"
    case $? in
        0) report push pass ;;
        *) report push fail ;;
    esac
fi
exit 0
