//! cyclictest's options typed at `rtlab measure` by habit (rt-tests 2.x, `cyclictest --help`).
//! Those with an rtlab meaning that is the same are `measure`'s own flags or aliases of them
//! (`-a -i -D -l -p -b -q -h --policy --mainaffinity --latency --json`); those that ask for what
//! rtlab always does are accepted here and change nothing (`-S -m -n -t --tracemark -c 0`);
//! every other one is refused, before anything runs, with one line naming what to type
//! instead ([`CyclictestHabits::refusal`]). None of them is shown in `--help`: its
//! "CYCLICTEST EQUIVALENTS" table and docs/cli-conventions.md say what each becomes.

use std::path::Path;

use clap::Args;

/// The cyclictest options `rtlab measure` reads only to accept or refuse them.
#[derive(Debug, Default, Args)]
pub struct CyclictestHabits {
    /// cyclictest -S/--smp: a thread per CPU, all at one priority; what rtlab always does.
    #[arg(short = 'S', long = "smp", hide = true)]
    pub smp: bool,
    /// cyclictest -m/--mlockall: rtlab locks memory unless --no-mlock.
    #[arg(short = 'm', long = "mlockall", hide = true)]
    pub mlockall: bool,
    /// cyclictest -n/--nanosleep (older versions): rtlab always sleeps with clock_nanosleep.
    #[arg(short = 'n', long = "nanosleep", hide = true)]
    pub nanosleep: bool,
    /// cyclictest -t [NUM]/--threads: without NUM a thread per CPU, as rtlab always runs.
    #[arg(short = 't', long = "threads", value_name = "NUM", num_args = 0..=1, hide = true)]
    pub threads: Option<Option<String>>,
    /// cyclictest --tracemark: rtlab's --break always writes the marker.
    #[arg(long = "tracemark", hide = true)]
    pub tracemark: bool,
    /// cyclictest -c/--clock: 0 (CLOCK_MONOTONIC) is the only clock rtlab measures on.
    #[arg(short = 'c', long = "clock", value_name = "CLOCK", hide = true)]
    pub clock: Option<String>,
    /// cyclictest -A/--aligned=USEC (rtlab's --aligned takes no value).
    #[arg(short = 'A', value_name = "USEC", hide = true)]
    pub align: Option<String>,
    /// cyclictest -d/--distance.
    #[arg(short = 'd', long = "distance", value_name = "DIST", hide = true)]
    pub distance: Option<String>,
    /// cyclictest -F/--fifo.
    #[arg(short = 'F', long = "fifo", value_name = "PATH", hide = true)]
    pub fifo: Option<String>,
    /// cyclictest -H/--histofall.
    #[arg(short = 'H', long = "histofall", value_name = "US", hide = true)]
    pub histofall: Option<String>,
    /// cyclictest --histfile.
    #[arg(long = "histfile", value_name = "PATH", hide = true)]
    pub histfile: Option<String>,
    /// cyclictest --json=FILE (its own layout; rtlab's `--json` of earlier releases wrote
    /// rtlab's result, so a script could not tell which it got).
    #[arg(long = "json", value_name = "FILE", hide = true)]
    pub json: Option<String>,
    /// cyclictest --laptop.
    #[arg(long = "laptop", hide = true)]
    pub laptop: bool,
    /// cyclictest --default-system.
    #[arg(long = "default-system", hide = true)]
    pub default_system: bool,
    /// cyclictest -M/--refresh_on_max.
    #[arg(short = 'M', long = "refresh_on_max", hide = true)]
    pub refresh_on_max: bool,
    /// cyclictest -N/--nsecs.
    #[arg(short = 'N', long = "nsecs", hide = true)]
    pub nsecs: bool,
    /// cyclictest --priospread.
    #[arg(long = "priospread", hide = true)]
    pub priospread: bool,
    /// cyclictest -r/--relative.
    #[arg(short = 'r', long = "relative", hide = true)]
    pub relative: bool,
    /// cyclictest -R/--resolution.
    #[arg(short = 'R', long = "resolution", hide = true)]
    pub resolution: bool,
    /// cyclictest --secaligned [USEC].
    #[arg(long = "secaligned", value_name = "USEC", num_args = 0..=1, hide = true)]
    pub secaligned: Option<Option<String>>,
    /// cyclictest -s/--system.
    #[arg(short = 's', long = "system", hide = true)]
    pub system: bool,
    /// cyclictest --spike=TRIGGER.
    #[arg(long = "spike", value_name = "TRIGGER", hide = true)]
    pub spike: Option<String>,
    /// cyclictest --spike-nodes=N.
    #[arg(long = "spike-nodes", value_name = "N", hide = true)]
    pub spike_nodes: Option<String>,
    /// cyclictest --smi.
    #[arg(long = "smi", hide = true)]
    pub smi: bool,
    /// cyclictest -u/--unbuffered.
    #[arg(short = 'u', long = "unbuffered", hide = true)]
    pub unbuffered: bool,
    /// cyclictest -v/--verbose.
    #[arg(short = 'v', long = "verbose", hide = true)]
    pub verbose: bool,
    /// cyclictest --dbg_cyclictest.
    #[arg(long = "dbg_cyclictest", hide = true)]
    pub dbg_cyclictest: bool,
    /// cyclictest -x/--posix_timers.
    #[arg(short = 'x', long = "posix_timers", hide = true)]
    pub posix_timers: bool,
    /// cyclictest --deepest-idle-state=N.
    #[arg(long = "deepest-idle-state", value_name = "N", hide = true)]
    pub deepest_idle_state: Option<String>,
    /// cyclictest --numa (older versions).
    #[arg(long = "numa", hide = true)]
    pub numa: bool,
    /// cyclictest -o/--oscope=RED spelled long (rtlab's -o is its result file).
    #[arg(long = "oscope", value_name = "RED", hide = true)]
    pub oscope: Option<String>,
}

/// The per-sample stream cyclictest's -v, -u, -F and -o give, and what rtlab keeps instead.
const KEPT: &str = "rtlab keeps every sample in its histogram, the worst ones with their cycle \
                    numbers and the per-second maximum: write them with -o FILE";

/// The cyclictest options rtlab refuses, in the order of cyclictest's help, each with what to
/// type instead (or why there is nothing to).
const REFUSED: [(&str, &str); 25] = [
    (
        "-A/--aligned=USEC",
        "rtlab's --aligned (no value) wakes every thread at the same instant",
    ),
    (
        "--default-system",
        "to leave deep idle states allowed, give --dma-latency off",
    ),
    (
        "-d/--distance",
        "rtlab spreads the threads' deadlines over the period by itself; --aligned wakes them \
         together",
    ),
    ("-F/--fifo", KEPT),
    (
        "-H/--histofall",
        "use -h/--histogram US for cyclictest's histogram",
    ),
    (
        "--histfile",
        "rtlab prints the histogram on standard output: -h US > FILE",
    ),
    (
        "--json=FILE",
        "-o FILE writes rtlab's result (not cyclictest's layout), and `rtlab import` reads \
         cyclictest's",
    ),
    (
        "--laptop",
        "to leave deep idle states allowed, give --dma-latency off",
    ),
    (
        "-M/--refresh_on_max",
        "the live view refreshes once a second on a terminal; -q shows none",
    ),
    (
        "-N/--nsecs",
        "--format json prints every figure in nanoseconds",
    ),
    (
        "--priospread",
        "every measuring thread runs at -p/--priority",
    ),
    (
        "-r/--relative",
        "rtlab sleeps to absolute deadlines only, as cyclictest does by default",
    ),
    (
        "-R/--resolution",
        "rtlab has no clock resolution check; `rtlab audit` reports the clock source",
    ),
    (
        "--secaligned",
        "--aligned wakes every thread at the same instant",
    ),
    ("-s/--system", "rtlab always sleeps with clock_nanosleep"),
    (
        "--spike",
        "rtlab keeps the worst samples of each CPU with their time and cycle: --spikes N sets \
         how many (default 32)",
    ),
    (
        "--spike-nodes",
        "--spikes N sets how many of the worst samples each CPU keeps",
    ),
    (
        "--smi",
        "`rtlab hwlat` measures what SMIs and firmware take from the CPUs",
    ),
    ("-u/--unbuffered", KEPT),
    ("-v/--verbose", KEPT),
    (
        "--dbg_cyclictest",
        "rtlab has no such mode; see `rtlab measure --help`",
    ),
    (
        "-x/--posix_timers",
        "rtlab always sleeps with clock_nanosleep",
    ),
    (
        "--deepest-idle-state",
        "-e/--dma-latency TIME keeps every CPU out of idle states slower to leave than TIME",
    ),
    (
        "--numa",
        "rtlab does not bind memory to NUMA nodes; -a/--cpus picks the CPUs",
    ),
    (
        "-o/--oscope",
        "rtlab keeps the per-second maximum of each CPU in its result: -o FILE writes it",
    ),
];

impl CyclictestHabits {
    /// The first cyclictest option given that rtlab does not read, in one line saying what to
    /// type instead; `None` when every one given is accepted. `output` is `-o`'s value, which
    /// cyclictest reads as its oscilloscope reduction when it is a number.
    pub fn refusal(&self, output: Option<&Path>) -> Option<String> {
        self.value_refusal(output).or_else(|| self.flag_refusals())
    }

    /// Refusals that depend on the value given.
    fn value_refusal(&self, output: Option<&Path>) -> Option<String> {
        if let Some(Some(n)) = &self.threads {
            return Some(format!(
                "-t {n}: rtlab runs one thread on each measured CPU; name the CPUs with -a/--cpus \
                 (e.g. -a 0-3 for four threads), or give -t without a number"
            ));
        }
        if let Some(c) = &self.clock
            && c.trim() != "0"
        {
            return Some(format!(
                "-c {c}: rtlab measures on CLOCK_MONOTONIC only (cyclictest's -c 0); leave -c out"
            ));
        }
        let numeric = output
            .and_then(Path::to_str)
            .is_some_and(|o| !o.is_empty() && o.bytes().all(|b| b.is_ascii_digit()));
        if numeric {
            let o = output.map(Path::display).map(|d| d.to_string());
            let o = o.unwrap_or_default();
            return Some(format!(
                "-o {o}: rtlab's -o writes the result to FILE, not cyclictest's oscilloscope \
                 reduction; {KEPT}, and to name a file {o}, write -o ./{o}"
            ));
        }
        None
    }

    /// Refusals of options rtlab has no use for, in the order of [`REFUSED`].
    fn flag_refusals(&self) -> Option<String> {
        let given = [
            self.align.is_some(),
            self.default_system,
            self.distance.is_some(),
            self.fifo.is_some(),
            self.histofall.is_some(),
            self.histfile.is_some(),
            self.json.is_some(),
            self.laptop,
            self.refresh_on_max,
            self.nsecs,
            self.priospread,
            self.relative,
            self.resolution,
            self.secaligned.is_some(),
            self.system,
            self.spike.is_some(),
            self.spike_nodes.is_some(),
            self.smi,
            self.unbuffered,
            self.verbose,
            self.dbg_cyclictest,
            self.posix_timers,
            self.deepest_idle_state.is_some(),
            self.numa,
            self.oscope.is_some(),
        ];
        REFUSED
            .iter()
            .zip(given)
            .find(|(_, on)| *on)
            .map(|((flag, instead), _)| format!("{flag} is cyclictest's, not rtlab's; {instead}"))
    }
}
