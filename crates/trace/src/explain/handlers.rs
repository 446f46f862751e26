//! The first pass's interrupt and softirq handlers: each handler met, interned by kind,
//! number and the name its event gives, with its run durations; and per CPU the handlers open
//! (bounded, so a damaged trace cannot grow it).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use model::Histogram;

use super::fill::Fill;

/// Durations of one interrupt handler (or softirq).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HandlerStats {
    /// Times it ran.
    pub count: u64,
    /// Time it ran in all, ns.
    pub total_ns: u64,
    /// Its longest run, ns.
    pub max_ns: u64,
    /// When that was (trace clock) and on which CPU.
    pub max_at: (u64, u32),
    /// Durations.
    pub histogram: Histogram,
}

/// Handlers open on one CPU at most: real nesting is a few deep (a softirq, an interrupt, an
/// NMI); entries without exits beyond this are a damaged trace, and the oldest is dropped so
/// the scan's memory stays bounded.
const MAX_OPEN: usize = 32;

/// A handler `name` started on `cpu` at `ts`.
pub(super) fn enter(open: &mut Vec<Vec<(u32, u64)>>, cpu: u32, id: u32, ts: u64) {
    let c = cpu as usize;
    if open.len() <= c {
        open.resize_with(c + 1, Vec::new);
    }
    let stack = &mut open[c];
    if stack.len() >= MAX_OPEN {
        stack.remove(0);
    }
    stack.push((id, ts));
}

/// The handlers a scan met, interned: looked up by kind and number and the name the event
/// gives (no name is built per event), their statistics kept by index.
#[derive(Default)]
pub(super) struct Handlers {
    /// (kind, number) → (the event's name, index).
    by_key: HashMap<(u8, u32), Vec<(String, u32)>>,
    /// Each handler's name as reports show it, and its statistics.
    names: Vec<String>,
    pub(super) stats: Vec<(HandlerStats, Fill)>,
}

impl Handlers {
    /// The index of the handler `key` named `raw` (`name` makes its report name the first
    /// time).
    pub(super) fn id(&mut self, key: (u8, u32), raw: &str, name: impl FnOnce() -> String) -> u32 {
        let list = self.by_key.entry(key).or_default();
        if let Some(&(_, id)) = list.iter().find(|(n, _)| n == raw) {
            return id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        list.push((raw.to_string(), id));
        self.names.push(name());
        self.stats.push(Default::default());
        id
    }

    /// The statistics by report name (handlers whose names coincide merged).
    pub(super) fn by_name(self) -> BTreeMap<String, HandlerStats> {
        let mut out: BTreeMap<String, HandlerStats> = BTreeMap::new();
        for (name, (mut h, fill)) in self.names.into_iter().zip(self.stats) {
            fill.finish(&mut h.histogram);
            match out.get_mut(&name) {
                None => {
                    out.insert(name, h);
                }
                Some(o) => {
                    o.count += h.count;
                    o.total_ns = o.total_ns.saturating_add(h.total_ns);
                    if h.max_ns >= o.max_ns {
                        o.max_ns = h.max_ns;
                        o.max_at = h.max_at;
                    }
                    o.histogram.merge(&h.histogram);
                }
            }
        }
        out
    }
}
