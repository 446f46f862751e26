//! What to do about what `rtlab explain` finds, in words: the fix for a slow handler of each
//! kind (`model::explain::HandlerFix`), where softirqs run, and the handler patterns' names and
//! remedies (`model::explain::HandlerPattern`).

use model::explain::{HandlerFix, HandlerPattern};

/// Where a softirq runs, which decides whom it delays: said once under the softirqs' fixes.
pub const SOFTIRQ_CONTEXT: &str = "on PREEMPT_RT a softirq runs in the thread that raised it or in ksoftirqd/N (timer softirqs in ktimers/N) at that thread's priority, so a real-time thread of higher priority preempts it; on other kernels it runs on interrupt exit with preemption off and delays every thread on its CPU";

/// What to do about a slow handler of kind `fix`.
pub fn advice(fix: HandlerFix) -> &'static str {
    match fix {
        HandlerFix::HardIrq => {
            "a hard interrupt handler that long delays every real-time thread on its CPU; move its IRQ off the real-time CPUs (/proc/irq/N/smp_affinity_list) or make it a threaded IRQ (boot with threadirqs; PREEMPT_RT threads every IRQ not marked IRQF_NO_THREAD)"
        }
        HandlerFix::Vector => {
            "a CPU-local interrupt (local timer, IPI, irq_work) that IRQ affinity cannot move; find what raises it on the real-time CPUs (hrtimers armed there, IPIs sent from other CPUs) and move that work away; nohz_full= stops the periodic tick on a CPU running one task"
        }
        HandlerFix::Network => {
            "network processing runs on the CPU whose NIC queue interrupted: move the NIC queues' IRQs to housekeeping CPUs, and steer receive processing with RPS (/sys/class/net/DEV/queues/rx-N/rps_cpus) and transmit queues with XPS (tx-N/xps_cpus) away from the real-time CPUs"
        }
        HandlerFix::Timers => {
            "expiring timers run on the CPU that armed them (hrtimers not marked hard expire here on PREEMPT_RT): move the tasks that arm them off the real-time CPUs, boot with nohz_full= so unpinned timers go to housekeeping CPUs, and turn timer migration off (echo 0 > /proc/sys/kernel/timer_migration) so idle CPUs' timers are not pushed onto them"
        }
        HandlerFix::Rcu => {
            "RCU callbacks run in this softirq on the CPU that queued them: boot with rcu_nocbs= naming the real-time CPUs (nohz_full= implies it on kernels with CONFIG_RCU_NOCB_CPU) and keep the rcuo threads that then run them on housekeeping CPUs"
        }
        HandlerFix::Sched => {
            "this is the scheduler's load balancing: take the real-time CPUs out of it with isolcpus=domain,CPUS or an isolated cpuset partition (cpuset.cpus.partition=isolated)"
        }
        HandlerFix::Block => {
            "block I/O completions run on the CPU the storage device interrupted, or go back to the CPU that submitted the request (/sys/block/DEV/queue/rq_affinity): keep storage IRQs and the tasks doing I/O off the real-time CPUs"
        }
        HandlerFix::Tasklet => {
            "a tasklet runs on the CPU whose interrupt handler scheduled it: move that device's IRQ off the real-time CPUs"
        }
        HandlerFix::OtherSoftirq => {
            "find which interrupt or task raises it on the real-time CPUs (softirq_raise events show it) and move that off them"
        }
    }
}

/// The pattern in words.
pub fn pattern(p: HandlerPattern) -> &'static str {
    match p {
        HandlerPattern::ConcurrentHrtimerExpiries => {
            "concurrent hrtimer expiries of non-real-time tasks: the timer interrupt runs every due timer's callback and wake-up in hard interrupt context before the real-time thread can run"
        }
    }
}

/// What to do about the pattern.
pub fn pattern_fix(p: HandlerPattern) -> &'static str {
    match p {
        HandlerPattern::ConcurrentHrtimerExpiries => {
            "on a PREEMPT_RT kernel the hrtimers of non-real-time tasks expire in the timer softirq (ktimers thread) instead, off the real-time thread's path; in the application, use fewer and coarser timers for non-real-time work (one periodic timer serving several jobs, timer slack via prctl(PR_SET_TIMERSLACK), periods that do not coincide with the real-time thread's)"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A softirq is never told to move "its IRQ" or to become a threaded IRQ.
    #[test]
    fn a_softirq_is_never_told_to_become_a_threaded_irq() {
        for fix in [
            HandlerFix::Network,
            HandlerFix::Timers,
            HandlerFix::Rcu,
            HandlerFix::Sched,
            HandlerFix::Block,
            HandlerFix::OtherSoftirq,
        ] {
            assert!(fix.is_softirq());
            assert!(!advice(fix).contains("threaded IRQ"), "{fix:?}");
        }
        assert!(advice(HandlerFix::HardIrq).contains("threaded IRQ"));
    }
}
