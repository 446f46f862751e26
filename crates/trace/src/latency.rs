//! The latency tracers' reports (irqsoff, preemptoff, preemptirqsoff, wakeup, wakeup_rt).
