//! A host's long-term view of its monitor history, from the figures every interval keeps in
//! the store's columns (no interval document is read): the maxima over time reduced to the
//! points a plot can show (OSADL's long-term plot), and the history cut into spans of one
//! setup (kernel release, engine, CPUs watched, budget) with each span's figures and how they
//! moved from the span before: the drift after a kernel or configuration change.

use serde::Serialize;

/// One interval as the long-term view reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HistoryPoint {
    /// Its start, Unix ns.
    pub start_ns: i64,
    /// Its length, ns.
    pub length_ns: u64,
    /// Its largest latency, ns; absent when nothing was measured.
    pub max_ns: Option<u64>,
    /// Wake-ups measured.
    pub samples: u64,
    /// Wake-ups later than the budget.
    pub breaches: u64,
    /// The kernel release.
    pub kernel_release: String,
    /// What measured.
    pub engine: String,
    /// The CPUs watched, as a list.
    pub cpus: String,
    /// The budget, ns.
    pub budget_ns: Option<u64>,
}

impl HistoryPoint {
    /// What a change of starts a new span.
    fn setup(&self) -> (&str, &str, &str, Option<u64>) {
        (
            &self.kernel_release,
            &self.engine,
            &self.cpus,
            self.budget_ns,
        )
    }
}

/// A host's monitor history in a recent time, for the fleet's view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MonitorHost {
    /// The host.
    pub host: String,
    /// Its newest interval's start, Unix ns.
    pub last_ns: i64,
    /// Its intervals in the time.
    pub intervals: u64,
    /// Their worst maximum, ns.
    pub worst_ns: Option<u64>,
    /// Their wake-ups over the budget.
    pub breaches: u64,
    /// Its incidents that began in the time.
    pub incidents: u64,
}

/// The maxima of consecutive intervals joined into one plotted point.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlotPoint {
    /// The first interval's start, Unix ns.
    pub start_ns: i64,
    /// The last interval's end, Unix ns.
    pub end_ns: i64,
    /// The largest maximum among them, ns (never an average: a spike stays visible at any
    /// zoom).
    pub max_ns: u64,
    /// Wake-ups over the budget among them.
    pub breaches: u64,
}

/// At most `width` points covering `points` (oldest first), each the largest maximum of an
/// equal share of the time range; intervals without a maximum are left out, so a gap in the
/// history stays a gap.
pub fn plot_points(points: &[HistoryPoint], width: usize) -> Vec<PlotPoint> {
    let measured: Vec<&HistoryPoint> = points.iter().filter(|p| p.max_ns.is_some()).collect();
    let (Some(first), Some(last)) = (measured.first(), measured.last()) else {
        return Vec::new();
    };
    let width = width.max(1);
    let from = first.start_ns;
    let to = end(last).max(from.saturating_add(1));
    let span = i128::from(to) - i128::from(from);
    let mut out: Vec<PlotPoint> = Vec::new();
    let mut slot_of_last = None;
    for p in measured {
        let slot = ((i128::from(p.start_ns) - i128::from(from)) * width as i128 / span)
            .clamp(0, width as i128 - 1);
        let max = p.max_ns.unwrap_or(0);
        match out.last_mut() {
            Some(o) if slot_of_last == Some(slot) => {
                o.max_ns = o.max_ns.max(max);
                o.end_ns = o.end_ns.max(end(p));
                o.breaches = o.breaches.saturating_add(p.breaches);
            }
            _ => {
                out.push(PlotPoint {
                    start_ns: p.start_ns,
                    end_ns: end(p),
                    max_ns: max,
                    breaches: p.breaches,
                });
                slot_of_last = Some(slot);
            }
        }
    }
    out
}

fn end(p: &HistoryPoint) -> i64 {
    p.start_ns
        .saturating_add(i64::try_from(p.length_ns).unwrap_or(i64::MAX))
}

/// Consecutive intervals of one setup.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Span {
    /// The kernel release.
    pub kernel_release: String,
    /// What measured.
    pub engine: String,
    /// The CPUs watched.
    pub cpus: String,
    /// The budget, ns.
    pub budget_ns: Option<u64>,
    /// The first interval's start, Unix ns.
    pub from_ns: i64,
    /// The last interval's end, Unix ns.
    pub to_ns: i64,
    /// Intervals in it.
    pub intervals: u64,
    /// Intervals in it with a maximum (something was measured).
    pub measured: u64,
    /// Wake-ups.
    pub samples: u64,
    /// Wake-ups over the budget.
    pub breaches: u64,
    /// The largest interval maximum, ns.
    pub worst_ns: Option<u64>,
    /// The median of the interval maxima, ns: the typical interval's worst wake-up.
    pub median_max_ns: Option<u64>,
    /// The 99th percentile of the interval maxima (nearest rank), ns: how bad one interval in
    /// a hundred gets.
    pub p99_max_ns: Option<u64>,
    /// What changed from the span before (`kernel 6.12.57 → 6.12.74`, `CPUs 2-3 → 1-3`);
    /// empty for the first.
    pub change: Vec<String>,
    /// This span's median interval maximum against the span before's, percent; absent for the
    /// first or when either has none.
    pub median_change_percent: Option<f64>,
    /// This span's worst against the span before's, percent.
    pub worst_change_percent: Option<f64>,
}

/// `points` (oldest first) cut into spans of one setup, each with its figures and its change
/// from the span before.
pub fn spans(points: &[HistoryPoint]) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let mut start = 0;
    while start < points.len() {
        let setup = points[start].setup();
        let mut stop = start + 1;
        while stop < points.len() && points[stop].setup() == setup {
            stop += 1;
        }
        let span = span_of(&points[start..stop], out.last());
        out.push(span);
        start = stop;
    }
    out
}

fn span_of(run: &[HistoryPoint], before: Option<&Span>) -> Span {
    let first = &run[0];
    let mut maxima: Vec<u64> = run.iter().filter_map(|p| p.max_ns).collect();
    maxima.sort_unstable();
    let rank = |percent: usize| -> Option<u64> {
        if maxima.is_empty() {
            return None;
        }
        // Nearest rank: the smallest value with at least `percent` % of the maxima at or
        // below it, in integers (no rounding of the rank).
        let k = (maxima.len().saturating_mul(percent))
            .div_ceil(100)
            .clamp(1, maxima.len());
        Some(maxima[k - 1])
    };
    let mut span = Span {
        kernel_release: first.kernel_release.clone(),
        engine: first.engine.clone(),
        cpus: first.cpus.clone(),
        budget_ns: first.budget_ns,
        from_ns: first.start_ns,
        to_ns: run.iter().map(end).max().unwrap_or(first.start_ns),
        intervals: run.len() as u64,
        measured: maxima.len() as u64,
        samples: run.iter().fold(0u64, |a, p| a.saturating_add(p.samples)),
        breaches: run.iter().fold(0u64, |a, p| a.saturating_add(p.breaches)),
        worst_ns: maxima.last().copied(),
        median_max_ns: rank(50),
        p99_max_ns: rank(99),
        change: Vec::new(),
        median_change_percent: None,
        worst_change_percent: None,
    };
    if let Some(b) = before {
        span.change = changes(b, &span);
        span.median_change_percent = percent(b.median_max_ns, span.median_max_ns);
        span.worst_change_percent = percent(b.worst_ns, span.worst_ns);
    }
    span
}

/// What differs between two spans' setups, one phrase each.
fn changes(a: &Span, b: &Span) -> Vec<String> {
    let mut out = Vec::new();
    let mut differ = |what: &str, x: &str, y: &str| {
        if x != y {
            out.push(format!("{what} {} → {}", shown(x), shown(y)));
        }
    };
    differ("kernel", &a.kernel_release, &b.kernel_release);
    differ("engine", &a.engine, &b.engine);
    differ("CPUs", &a.cpus, &b.cpus);
    let budget = |n: Option<u64>| n.map_or_else(|| "none".to_string(), |n| format!("{n} ns"));
    differ("budget", &budget(a.budget_ns), &budget(b.budget_ns));
    out
}

fn shown(text: &str) -> &str {
    if text.is_empty() { "unknown" } else { text }
}

/// `b` against `a`, percent.
fn percent(a: Option<u64>, b: Option<u64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a > 0 => Some((b as f64 - a as f64) * 100.0 / a as f64),
        _ => None,
    }
}
