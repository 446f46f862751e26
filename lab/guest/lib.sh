# Helpers for the lab's scenario steps (sourced before each step; busybox sh).

# fail MESSAGE: the step fails with one line saying why.
fail() { echo "FAIL: $*"; exit 1; }

# expect WHAT ACTUAL EXPECTED
expect() { [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"; }

# jnum KEY FILE: the first number after "KEY": in a JSON file (rtlab's JSON is one object).
jnum() { grep -o "\"$1\": *-\?[0-9.]*" "$2" | head -n 1 | sed 's/.*: *//'; }

# jstr KEY FILE: the first string value after "KEY": in a JSON file.
jstr() { grep -o "\"$1\": *\"[^\"]*\"" "$2" | head -n 1 | sed 's/.*: *"//; s/"$//'; }

# Every knob `rtlab tune` may touch, as "key<TAB>value" lines: IRQ affinities, sysctls, CPU
# frequency and idle settings, THP, workqueue masks, the cgroup tree with its control files,
# and for each task its cgroup, policy, priority and allowed CPUs.
snapshot() {
    {
        for f in /proc/irq/default_smp_affinity /proc/irq/*/smp_affinity_list \
            /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor \
            /sys/devices/system/cpu/cpu*/cpuidle/state*/disable \
            /sys/devices/system/cpu/cpu*/online \
            /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag \
            /sys/devices/virtual/workqueue/cpumask /sys/bus/workqueue/devices/*/cpumask \
            /proc/sys/kernel/* /proc/sys/vm/*; do
            [ -f "$f" ] && [ -r "$f" ] || continue
            case "$f" in */random*|*/ns_last_pid|*/drop_caches|*/compact_memory|*/stat_refresh|*/tainted) continue ;; esac
            printf '%s\t%s\n' "$f" "$(cat "$f" 2>/dev/null | tr '\n' ' ')"
        done
        find /sys/fs/cgroup -type d | sort | while read -r d; do
            printf '%s\tdir\n' "$d"
            for f in cgroup.subtree_control cgroup.type cpuset.cpus cpuset.mems cpuset.cpus.partition \
                cpuset.cpu_exclusive cpuset.mem_exclusive cpuset.sched_load_balance cpuset.cpus.exclusive \
                cpu.rt_runtime_us; do
                [ -f "$d/$f" ] && printf '%s\t%s\n' "$d/$f" "$(cat "$d/$f" 2>/dev/null | tr '\n' ' ')"
            done
        done
        for p in /proc/[0-9]*; do
            pid=${p#/proc/}
            st=$(cat "$p/stat" 2>/dev/null) || continue
            rest=${st##*) }
            set -- $rest
            flags=$7
            shift 37
            prio=$1 policy=$2
            cg=$(tr '\n' ' ' <"$p/cgroup" 2>/dev/null)
            cpus=$(sed -n 's/^Cpus_allowed_list:\t*//p' "$p/status" 2>/dev/null)
            # An IRQ thread's CPUs follow its IRQ's effective affinity (the kernel sets them),
            # which the IRQ's smp_affinity_list above already holds.
            case "$(cat "$p/comm" 2>/dev/null)" in irq/*) cpus=irq ;; esac
            # A workqueue worker's or rescuer's CPUs (PF_WQ_WORKER, 0x20) follow the pool it
            # serves at the moment (a rescuer binds to the CPU whose work it rescues), which
            # the workqueue cpumasks above already hold.
            [ $((flags & 32)) -ne 0 ] && cpus=wq
            printf 'task %s (%s)\tpolicy=%s prio=%s cpus=%s cgroup=%s\n' "$pid" "$(cat "$p/comm" 2>/dev/null)" "$policy" "$prio" "$cpus" "$cg"
        done
    } >"$1"
}

# same_state BEFORE AFTER: fails, listing what differs, unless every knob of BEFORE reads the
# same in AFTER. A task that ended in between is compared with a task of the same name that
# started in between, when there is one (a kernel thread the tuning ended and the revert
# started again, like khugepaged); other tasks that ended or started are not compared.
same_state() {
    awk -F '\t' '
        function comm(k) { sub(/^task [0-9]+ /, "", k); return k }
        NR == FNR { before[$1] = $2; next }
        { after[$1] = $2 }
        END {
            n = 0
            for (k in after) if (k ~ /^task / && !(k in before)) born[comm(k)] = after[k]
            for (k in before) {
                if (k ~ /^task / && !(k in after)) {
                    c = comm(k)
                    if ((c in born) && born[c] != before[k]) {
                        print "changed: " c " (started again): " before[k] " -> " born[c]; n++
                    }
                    continue
                }
                if (!(k in after)) { print "gone: " k " (was " before[k] ")"; n++; continue }
                if (before[k] != after[k]) { print "changed: " k ": " before[k] " -> " after[k]; n++ }
            }
            # A new IRQ is a device that came (hot-plug), not a knob left behind.
            for (k in after) if (!(k in before) && k !~ /^task / && k !~ /^\/proc\/irq\/[0-9]/) { print "new: " k " = " after[k]; n++ }
            exit n > 0
        }' "$1" "$2" || fail "the machine is not as it was (above)"
}

# irq_thread_prio NAME-PATTERN: "policy prio" of the first irq/ thread whose comm matches.
irq_thread_prio() {
    for p in /proc/[0-9]*; do
        c=$(cat "$p/comm" 2>/dev/null)
        case "$c" in irq/*) ;; *) continue ;; esac
        echo "$c" | grep -q -- "$1" || continue
        rest=$(cat "$p/stat"); rest=${rest##*) }
        set -- $rest; shift 37
        echo "$2 $1"
        return 0
    done
    return 1
}

# hog CPU PRIO BUSY_LOOPS SLEEP_US: a SCHED_FIFO shell loop (started by `rtlab exec`) on CPU that spins BUSY_LOOPS
# iterations and sleeps SLEEP_US, for ever (`unhog` ends it). Its comm is `lab-hog`.
hog() {
    cat >/tmp/lab-hog <<HOG
#!/bin/sh
while :; do i=0; while [ \$i -lt $3 ]; do i=\$((i + 1)); done; usleep $4; done
HOG
    chmod +x /tmp/lab-hog
    # rtlab exec sets the policy and the CPU, and joins the RT cpuset after `tune apply`
    # (busybox has no chrt).
    rtlab exec --policy fifo --priority "$2" --cpus "$1" -- /tmp/lab-hog &
    echo $! >/tmp/lab-hog.pid
    # Under emulation on a busy host the program may take seconds to come up.
    n=0
    while [ $n -lt 20 ]; do
        sleep 1
        for p in /proc/[0-9]*; do
            [ "$(cat "$p/comm" 2>/dev/null)" = lab-hog ] || continue
            echo "hog: pid ${p#/proc/}, $(grep Cpus_allowed_list "$p/status")"
            return 0
        done
        n=$((n + 1))
    done
    fail "the hog did not start within 20 s"
}

unhog() { kill "$(cat /tmp/lab-hog.pid)" 2>/dev/null; rm -f /tmp/lab-hog.pid; }

# measured_cpus FILE: the CPUs of the last table in rtlab's text output (`CPU samples ...`).
measured_cpus() {
    awk '/^ *CPU +samples/ { n = 0; delete cpus; t = 1; next }
         t && $1 ~ /^[0-9]+$/ { cpus[n++] = $1 }
         t && $1 == "all" { t = 0 }
         END { for (i = 0; i < n; i++) printf "%s%s", (i ? " " : ""), cpus[i]; print "" }' "$1"
}
