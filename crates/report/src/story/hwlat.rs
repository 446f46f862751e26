//! The hwlat tracer's samples (`trace::hwlat::HwlatReport`) in words: how many samples on how
//! many CPUs, the worst one, what the NMIs account for, and where such latency comes from.

use trace::hwlat::{HwlatReport, HwlatSample};

use super::plural;

/// One plain-English paragraph of `r`.
pub fn tell(r: &HwlatReport) -> String {
    let of = if r.cpus > 0 {
        format!(" of {}", r.cpus)
    } else {
        String::new()
    };
    let Some(w) = r.worst() else {
        return format!(
            "hwlat: no sample went over the threshold (tracing_thresh): the hardware, the \
             firmware and the hypervisor stayed out of the way while the tracer ran{}.",
            if r.cpus > 0 {
                format!(" on {} CPUs", r.cpus)
            } else {
                String::new()
            }
        );
    };
    let worst = w.inner_us.max(w.outer_us);
    let which = match w.inner_us.cmp(&w.outer_us) {
        std::cmp::Ordering::Greater => "inner",
        std::cmp::Ordering::Less => "outer",
        std::cmp::Ordering::Equal => "inner and outer",
    };
    let mut s = format!(
        "hwlat: {} over the threshold on {}{of} CPUs; worst {worst} us ({which}) on CPU {} at \
         ts {} (sample #{}",
        samples(r.samples.len()),
        r.per_cpu().len(),
        w.cpu,
        w.wall_ts,
        w.seq
    );
    if let Some(c) = w.count.filter(|&c| c > 1) {
        s += &format!(", one of {c} latencies in its window");
    }
    s += ").";
    nmis(&mut s, r, w, worst);
    s += " Latency seen with interrupts off and nothing else running points at firmware \
          (SMIs), the hypervisor or the hardware.";
    s
}

/// What the NMIs account for, when samples saw any.
fn nmis(s: &mut String, r: &HwlatReport, w: &HwlatSample, worst: u64) {
    let nmi: Vec<&HwlatSample> = (r.samples.iter())
        .filter(|s| s.nmi_count.unwrap_or(0) > 0 || s.nmi_total_us.unwrap_or(0) > 0)
        .collect();
    if nmi.is_empty() {
        return;
    }
    *s += &format!(" {} saw NMIs", samples(nmi.len()));
    if let Some(max) = nmi.iter().filter_map(|s| s.nmi_total_us).max() {
        *s += &format!(" (up to {max} us)");
    }
    *s += ": that time is the kernel's own NMI handling, not the hardware's.";
    if let Some(t) = w.nmi_total_us.filter(|&t| t > 0) {
        *s += &format!(" Of the worst sample's {worst} us, {t} us were NMIs.");
    }
}

fn samples(n: usize) -> String {
    plural(n as u64, "sample", "samples")
}
