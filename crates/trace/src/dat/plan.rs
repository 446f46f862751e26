//! For each event format of a recording, how to read the record into a [`Kind`]: which fields
//! hold what, found by name in the file's own formats (never assumed offsets), and the tables
//! its print format carries (softirq names, task-state letters). Built once per file.

use tracedat::{Endian, EventFormat, Field, TraceDat};

use crate::event::{Func, Kind, Task, Timer};

/// Softirq names when a format does not list them (the kernel's since 2.6.x).
const SOFTIRQS: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// A task's three fields.
#[derive(Clone, Debug)]
pub(super) struct TaskFields {
    comm: Field,
    pid: Field,
    prio: Field,
}

impl TaskFields {
    fn of(f: &EventFormat, prefix: &str) -> Option<TaskFields> {
        Some(TaskFields {
            comm: f.field(&format!("{prefix}comm"))?.clone(),
            pid: f.field(&format!("{prefix}pid"))?.clone(),
            prio: f.field(&format!("{prefix}prio"))?.clone(),
        })
    }

    #[inline]
    fn read<'a>(&self, d: &'a [u8], e: Endian) -> Option<Task<'a>> {
        Some(Task {
            comm: self.comm.str(d, e).unwrap_or("<...>"),
            pid: u32::try_from(self.pid.int(d, e)?).ok()?,
            prio: i32::try_from(self.prio.int(d, e)?).ok()?,
        })
    }
}

/// `sched_switch`'s previous-state letters.
#[derive(Clone, Debug)]
pub(super) struct States {
    letters: Vec<(u64, String)>,
    mask: u64,
    preempted: u64,
}

impl States {
    /// From `__print_flags`: the bits below the highest listed one twice are states; the bit
    /// above them marks a preempted task (`R+`).
    fn of(f: &EventFormat) -> States {
        let letters = f.symbols("__print_flags");
        let top = letters.iter().map(|(v, _)| *v).max().unwrap_or(0x40);
        let top = if top == 0 || top > 1 << 40 { 0x40 } else { top };
        States {
            letters,
            mask: (top << 1) - 1,
            preempted: top << 1,
        }
    }

    fn letter(&self, state: u64) -> &str {
        if state & self.mask == 0 {
            return if state & self.preempted != 0 {
                "R+"
            } else {
                "R"
            };
        }
        self.letters
            .iter()
            .find(|(v, _)| state & v != 0)
            .map_or("?", |(_, l)| l.as_str())
    }
}

/// How one format's records read.
#[derive(Clone, Debug)]
pub(super) enum Plan {
    Switch {
        prev: TaskFields,
        state: Field,
        states: States,
        next: TaskFields,
    },
    Wake {
        waking: bool,
        task: TaskFields,
        target: Option<Field>,
    },
    Migrate {
        task: TaskFields,
        orig: Field,
        dest: Field,
    },
    IrqEntry {
        irq: Field,
        name: Field,
    },
    IrqExit {
        irq: Field,
    },
    Softirq {
        which: u8,
        vec: Field,
        names: Vec<String>,
    },
    HrtimerStart {
        hrtimer: Field,
        function: Field,
        expires: Field,
    },
    HrtimerEntry {
        hrtimer: Field,
        function: Field,
        now: Field,
    },
    HrtimerExit {
        hrtimer: Field,
    },
    Vector {
        entry: bool,
        what: String,
    },
    Ipi {
        what: String,
    },
    WorkStart {
        function: Field,
    },
    WorkEnd,
    Preemptirq {
        which: u8,
        caller: Field,
    },
    Nmi {
        handler: Field,
        delta: Field,
    },
    Print {
        buf: Field,
    },
    Function {
        ip: Field,
        parent: Option<Field>,
    },
    GraphEntry {
        func: Field,
        depth: Field,
    },
    GraphExit {
        depth: Field,
        calltime: Option<Field>,
        rettime: Option<Field>,
    },
    Other,
}

/// The plan for `f`; [`Plan::Other`] for a format rtlab does not read or one missing a field.
pub(super) fn plan(f: &EventFormat) -> Plan {
    let p = match f.system.as_str() {
        "sched" => sched_plan(f),
        "irq" => irq_plan(f),
        "timer" => timer_plan(f),
        _ => other_plan(f),
    };
    p.unwrap_or(Plan::Other)
}

fn field(f: &EventFormat, name: &str) -> Option<Field> {
    f.field(name).cloned()
}

fn sched_plan(f: &EventFormat) -> Option<Plan> {
    match f.name.as_str() {
        "sched_switch" => Some(Plan::Switch {
            prev: TaskFields::of(f, "prev_")?,
            state: field(f, "prev_state")?,
            states: States::of(f),
            next: TaskFields::of(f, "next_")?,
        }),
        n @ ("sched_waking" | "sched_wakeup" | "sched_wakeup_new") => Some(Plan::Wake {
            waking: n == "sched_waking",
            task: TaskFields::of(f, "")?,
            target: field(f, "target_cpu"),
        }),
        "sched_migrate_task" => Some(Plan::Migrate {
            task: TaskFields::of(f, "")?,
            orig: field(f, "orig_cpu")?,
            dest: field(f, "dest_cpu")?,
        }),
        _ => None,
    }
}

fn irq_plan(f: &EventFormat) -> Option<Plan> {
    let which = match f.name.as_str() {
        "irq_handler_entry" => {
            return Some(Plan::IrqEntry {
                irq: field(f, "irq")?,
                name: field(f, "name")?,
            });
        }
        "irq_handler_exit" => {
            return Some(Plan::IrqExit {
                irq: field(f, "irq")?,
            });
        }
        "softirq_entry" => 0,
        "softirq_exit" => 1,
        "softirq_raise" => 2,
        _ => return None,
    };
    let mut names: Vec<String> = SOFTIRQS.iter().map(|s| (*s).to_string()).collect();
    for (v, n) in f.symbols("__print_symbolic") {
        if let Some(slot) = names.get_mut(v as usize) {
            *slot = n;
        }
    }
    Some(Plan::Softirq {
        which,
        vec: field(f, "vec")?,
        names,
    })
}

fn timer_plan(f: &EventFormat) -> Option<Plan> {
    match f.name.as_str() {
        "hrtimer_start" => Some(Plan::HrtimerStart {
            hrtimer: field(f, "hrtimer")?,
            function: field(f, "function")?,
            // The deadline asked for is the soft expiry (the hard one adds the slack).
            expires: field(f, "softexpires").or_else(|| field(f, "expires"))?,
        }),
        "hrtimer_expire_entry" => Some(Plan::HrtimerEntry {
            hrtimer: field(f, "hrtimer")?,
            function: field(f, "function")?,
            now: field(f, "now")?,
        }),
        "hrtimer_expire_exit" => Some(Plan::HrtimerExit {
            hrtimer: field(f, "hrtimer")?,
        }),
        _ => None,
    }
}

/// Workqueues, preemptirq, NMIs, trace markers, IPIs and x86's interrupt vectors.
fn other_plan(f: &EventFormat) -> Option<Plan> {
    const PREEMPTIRQ: [&str; 4] = [
        "irq_disable",
        "irq_enable",
        "preempt_disable",
        "preempt_enable",
    ];
    let name = f.name.as_str();
    match (f.system.as_str(), name) {
        ("workqueue", "workqueue_execute_start") => Some(Plan::WorkStart {
            function: field(f, "function")?,
        }),
        ("workqueue", "workqueue_execute_end") => Some(Plan::WorkEnd),
        ("preemptirq", n) if PREEMPTIRQ.contains(&n) => Some(Plan::Preemptirq {
            which: PREEMPTIRQ.iter().position(|p| *p == n).unwrap_or(0) as u8,
            caller: field(f, "caller_offs")?,
        }),
        ("nmi", "nmi_handler") => Some(Plan::Nmi {
            handler: field(f, "handler")?,
            delta: field(f, "delta_ns")?,
        }),
        ("ftrace", "print") => Some(Plan::Print {
            buf: field(f, "buf")?,
        }),
        ("ftrace", "function") => Some(Plan::Function {
            ip: field(f, "ip")?,
            parent: field(f, "parent_ip"),
        }),
        ("ftrace", "funcgraph_entry") => Some(Plan::GraphEntry {
            func: field(f, "func")?,
            depth: field(f, "depth")?,
        }),
        ("ftrace", "funcgraph_exit") => Some(Plan::GraphExit {
            depth: field(f, "depth")?,
            calltime: field(f, "calltime"),
            rettime: field(f, "rettime"),
        }),
        (_, n) if n.starts_with("ipi_") => Some(Plan::Ipi {
            what: n.to_string(),
        }),
        (_, n) if crate::event::is_vector(n) => Some(match n.strip_suffix("_entry") {
            Some(what) => Plan::Vector {
                entry: true,
                what: what.to_string(),
            },
            None => Plan::Vector {
                entry: false,
                what: n.strip_suffix("_exit").unwrap_or(n).to_string(),
            },
        }),
        _ => None,
    }
}

/// What a decode needs besides the record: the file's byte order and symbols, `_stext` (the
/// preemptirq events give callers as offsets from it), and a buffer for the timer's address.
pub(super) struct Ctx<'t> {
    pub(super) endian: Endian,
    pub(super) symbols: &'t tracedat::meta::Symbols,
    pub(super) stext: Option<u64>,
    /// Names looked up lately, by address (direct-mapped): a recording names the same few
    /// callbacks over and over, and a lookup among a kernel's 100,000 symbols is a binary
    /// search through memory the cache does not hold.
    recent: std::cell::RefCell<[Option<(u64, &'t str)>; RECENT]>,
}

/// Entries of [`Ctx`]'s cache of names.
const RECENT: usize = 64;

impl<'t> Ctx<'t> {
    pub(super) fn new<R>(dat: &'t TraceDat<R>) -> Ctx<'t> {
        Ctx {
            endian: dat.endian,
            symbols: &dat.symbols,
            stext: dat.symbols.address("_stext"),
            recent: std::cell::RefCell::new([None; RECENT]),
        }
    }

    /// A function by its symbol, else by its address (as trace-cmd shows one it cannot name).
    fn function(&self, addr: u64) -> Func<'t> {
        match self.symbol(addr) {
            "" => Func::Addr(addr),
            name => Func::Name(name),
        }
    }

    fn symbol(&self, addr: u64) -> &'t str {
        // Functions are aligned to 16 bytes on most architectures.
        let slot = (addr >> 4) as usize % RECENT;
        let mut recent = self.recent.borrow_mut();
        if let Some((a, name)) = recent[slot]
            && a == addr
        {
            return name;
        }
        let name = self.symbols.name(addr).unwrap_or("");
        recent[slot] = Some((addr, name));
        name
    }
}

/// A CPU number read from a record, within any kernel's.
fn cpu(f: &Field, d: &[u8], e: Endian) -> Option<u32> {
    u32::try_from(f.int(d, e)?)
        .ok()
        .filter(|&c| c <= model::cpuset::MAX_CPU)
}

/// Reads record `d` by `plan`.
#[inline]
pub(super) fn decode<'a, 't: 'a>(plan: &'a Plan, d: &'a [u8], ctx: &Ctx<'t>) -> Option<Kind<'a>> {
    let e = ctx.endian;
    Some(match plan {
        Plan::Switch {
            prev,
            state,
            states,
            next,
        } => Kind::Switch {
            prev: prev.read(d, e)?,
            prev_state: states.letter(state.uint(d, e)?),
            next: next.read(d, e)?,
        },
        Plan::Wake {
            waking,
            task,
            target,
        } => {
            let task = task.read(d, e)?;
            let target_cpu = match target {
                Some(f) => Some(cpu(f, d, e)?),
                None => None,
            };
            if *waking {
                Kind::Waking { task, target_cpu }
            } else {
                Kind::Wakeup { task, target_cpu }
            }
        }
        Plan::Migrate { task, orig, dest } => Kind::Migrate {
            task: task.read(d, e)?,
            orig_cpu: cpu(orig, d, e)?,
            dest_cpu: cpu(dest, d, e)?,
        },
        Plan::IrqEntry { irq, name } => Kind::IrqEntry {
            irq: u32::try_from(irq.int(d, e)?).ok()?,
            name: name.str(d, e).unwrap_or(""),
        },
        Plan::IrqExit { irq } => Kind::IrqExit {
            irq: u32::try_from(irq.int(d, e)?).ok()?,
        },
        Plan::Softirq { which, vec, names } => {
            let vec = u32::try_from(vec.uint(d, e)?).ok()?;
            match which {
                0 => Kind::SoftirqEntry {
                    vec,
                    action: names.get(vec as usize).map_or("", String::as_str),
                },
                1 => Kind::SoftirqExit { vec },
                _ => Kind::SoftirqRaise { vec },
            }
        }
        _ => return decode_rest(plan, d, ctx),
    })
}

/// Timers, vectors, workqueues, preemptirq, NMIs and markers.
fn decode_rest<'a, 't: 'a>(plan: &'a Plan, d: &'a [u8], ctx: &Ctx<'t>) -> Option<Kind<'a>> {
    let e = ctx.endian;
    Some(match plan {
        Plan::HrtimerStart {
            hrtimer: h,
            function,
            expires,
        } => Kind::HrtimerStart {
            hrtimer: address(h, d, e)?,
            function: ctx.symbol(function.uint(d, e)?),
            expires_ns: u64::try_from(expires.int(d, e)?).ok()?,
        },
        Plan::HrtimerEntry {
            hrtimer: h,
            function,
            now,
        } => Kind::HrtimerExpireEntry {
            hrtimer: address(h, d, e)?,
            function: ctx.symbol(function.uint(d, e)?),
            now_ns: u64::try_from(now.int(d, e)?).ok()?,
        },
        Plan::HrtimerExit { hrtimer: h } => Kind::HrtimerExpireExit {
            hrtimer: address(h, d, e)?,
        },
        Plan::Vector { entry: true, what } => Kind::VectorEntry { what },
        Plan::Vector { entry: false, what } => Kind::VectorExit { what },
        Plan::Ipi { what } => Kind::Ipi { what },
        Plan::WorkStart { function } => Kind::WorkStart {
            function: ctx.symbol(function.uint(d, e)?),
        },
        Plan::WorkEnd => Kind::WorkEnd,
        Plan::Preemptirq { which, caller } => {
            let caller = match ctx.stext {
                Some(stext) => ctx.symbol(stext.wrapping_add_signed(caller.int(d, e)?)),
                None => "",
            };
            match which {
                0 => Kind::IrqsOff { caller },
                1 => Kind::IrqsOn { caller },
                2 => Kind::PreemptOff { caller },
                _ => Kind::PreemptOn { caller },
            }
        }
        Plan::Nmi { handler, delta } => Kind::Nmi {
            handler: ctx.symbol(handler.uint(d, e)?),
            delta_ns: u64::try_from(delta.int(d, e)?).ok()?,
        },
        Plan::Print { buf } => Kind::Marker {
            text: buf.str(d, e)?.trim(),
        },
        _ => return decode_functions(plan, d, ctx),
    })
}

/// The function tracers' calls and returns, their functions named by the recording's symbols.
fn decode_functions<'a, 't: 'a>(plan: &'a Plan, d: &'a [u8], ctx: &Ctx<'t>) -> Option<Kind<'a>> {
    let e = ctx.endian;
    Some(match plan {
        Plan::Function { ip, parent } => Kind::Function {
            func: ctx.function(ip.uint(d, e)?),
            parent: match parent {
                Some(p) => ctx.function(p.uint(d, e)?),
                None => Func::Name(""),
            },
        },
        Plan::GraphEntry { func, depth } => Kind::GraphEntry {
            func: ctx.function(func.uint(d, e)?),
            depth: u32::try_from(depth.int(d, e)?).ok()?,
            leaf_ns: None,
        },
        Plan::GraphExit {
            depth,
            calltime,
            rettime,
        } => {
            let time = |f: &Option<Field>| f.as_ref().and_then(|f| f.uint(d, e));
            Kind::GraphExit {
                depth: u32::try_from(depth.int(d, e)?).ok()?,
                duration_ns: time(rettime)
                    .zip(time(calltime))
                    .and_then(|(r, c)| r.checked_sub(c)),
            }
        }
        _ => return None,
    })
}

/// A timer's address field.
#[inline]
fn address<'a>(f: &Field, d: &[u8], e: Endian) -> Option<Timer<'a>> {
    Some(Timer::Addr(f.uint(d, e)?))
}
