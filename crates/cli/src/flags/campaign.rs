//! `rtlab campaign`: the long-run campaign's options, help and examples.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

pub const CAMPAIGN_LONG: &str = "\
Run a campaign: the phases of PLAN.toml one after the other — days of measurements under \
different loads and tunings, reboots between them, a reboot test — keeping its state on disk \
so that it continues where it stopped after a crash, a power cut or a reboot \
(`rtlab campaign resume --state DIR`; the systemd unit rtlab-campaign@NAME.service does that at \
boot). Each phase is measured by a child `rtlab measure`; its run is stored in the run store \
under the campaign's session with the phase's name as its label (and pushed with --push), and \
a finished phase is never run or stored twice. A phase that was interrupted keeps what it \
measured as an interrupted run and goes on for the rest of its duration; its verdict covers \
all its attempts.

The plan (TOML; every key is checked and an unknown key is refused with its line):

    name = \"van-vs-rt\"      the campaign's name (the default state directory's)
    budget = \"100us\"        the latency budget of every phase (default 100us)
    cpus = \"1-3\"            the CPUs every phase measures (default: all)
    interval = \"1ms\"        the measuring threads' interval (rtlab measure --interval)
    rt_cpus = \"2-3\"         the CPUs tuned phases tune (rtlab tune apply --rt-cpus)
    reboot_between = true   reboot after every phase
    reboot_command = \"...\"  how to reboot (default `systemctl reboot`)

    [[phase]]
    name = \"RT-#2-busy\"     the label of the phase's runs (required, unique)
    duration = \"8h\"         how long it measures (1s to a year)
    load = \"cpu:60%\"        an rtlab load spec (see `rtlab load --help`)
    tuned = true            tune apply before the phase, revert after
    cpus = \"2-3\"            the CPUs it measures
    budget = \"50us\"         its own budget
    repeat = 3              three runs, labelled RT-#2-busy#1 .. #3
    reboot_after = true     reboot once the phase is done

    [[phase]]
    name = \"reboots\"        a reboot test: reboot N times; at every boot check that the
    reboots = 5             state and the store read back intact and (audit = true) that
    audit = true            `rtlab audit` gives the verdict it gave before the reboots

The state directory (--state, default /var/lib/rtlab/campaigns/NAME) holds the plan, \
state.json (rewritten atomically), each attempt's result file, the tuning journal and a lock: \
one campaign runs a directory at a time, and a directory started with another plan is refused. \
Run it as root.";

pub const CAMPAIGN_AFTER: &str = "\
EXAMPLES:
    sudo rtlab campaign plan.toml --state van-vs-rt        run (or continue) it in ./van-vs-rt
    sudo rtlab campaign resume --state van-vs-rt           continue where it stopped
    rtlab campaign status --state van-vs-rt --format json
    rtlab campaign report --state van-vs-rt -o van-vs-rt.html
    sudo rtlab campaign plan.toml --push http://lab:8080   state in /var/lib/rtlab/campaigns/NAME
    sudo systemctl enable rtlab-campaign@van-vs-rt.service   resume that one at every boot

EXIT STATUS:
    0    every phase stayed within its budget (and every reboot check passed)
    1    a phase went over its budget, or a reboot check failed
    2    bad input (a bad plan, a state directory with another plan or a damaged state)
         or a setup error
    130  interrupted, or stopped for a reboot: `rtlab campaign resume` continues it";

/// What follows the options in `rtlab campaign resume --help`.
pub const RESUME_AFTER: &str = "\
EXAMPLES:
    sudo rtlab campaign resume --state van-vs-rt   continue the campaign in ./van-vs-rt

EXIT STATUS:
    0    every phase stayed within its budget (and every reboot check passed)
    1    a phase went over its budget, or a reboot check failed
    2    no campaign in DIR, a damaged state, or a setup error
    130  interrupted, or stopped for a reboot: resume it again";

/// What follows the options in `rtlab campaign status --help`.
pub const STATUS_AFTER: &str = "\
EXAMPLES:
    rtlab campaign status --state van-vs-rt   phase k of n, what is done, what is left

EXIT STATUS:
    0    the status was printed
    2    no campaign in DIR, or a damaged state";

/// What follows the options in `rtlab campaign report --help`.
pub const REPORT_AFTER: &str = "\
EXAMPLES:
    rtlab campaign report --state van-vs-rt -o van-vs-rt.html

EXIT STATUS:
    0    the report was written
    2    no campaign in DIR, no run stored yet, a damaged state, or an output that cannot
         be written";

/// Options of `rtlab campaign`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct CampaignArgs {
    /// `resume`, `status` or `report` (none: run PLAN).
    #[command(subcommand)]
    pub action: Option<CampaignAction>,
    /// The plan to run (TOML).
    #[arg(value_name = "PLAN.toml", required = true)]
    pub plan: Option<PathBuf>,
    /// The state directory (default /var/lib/rtlab/campaigns/NAME, NAME the plan's name).
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// The run store every phase is saved in (as for `rtlab measure --db`).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
    /// Upload every run to the `rtlab serve` at URL (queued when it cannot be reached); the
    /// token: $RTLAB_TOKEN.
    #[arg(long, value_name = "URL")]
    pub push: Option<String>,
    /// No live view or notes on standard error.
    #[arg(short, long)]
    pub quiet: bool,
    /// Drive the phases with a scripted clock instead of real sleeps (tests only).
    #[arg(long, value_name = "SCRIPT", hide = true)]
    pub fake_clock: Option<String>,
}

/// `rtlab campaign resume|status`.
#[derive(Debug, Subcommand)]
pub enum CampaignAction {
    /// Continue the campaign in DIR where it stopped (what the systemd unit runs at boot).
    #[command(after_long_help = RESUME_AFTER)]
    Resume {
        /// The state directory.
        #[arg(long, value_name = "DIR")]
        state: PathBuf,
        /// No live view or notes on standard error.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Say where the campaign in DIR is: the phase running, what is done (run ids, worst
    /// latency), what is left, the boots.
    #[command(after_long_help = STATUS_AFTER)]
    Status {
        /// The state directory.
        #[arg(long, value_name = "DIR")]
        state: PathBuf,
        /// text, or json (schema rtlab.campaign/1).
        #[arg(long, value_enum, default_value = "text")]
        format: CampaignFormat,
    },
    /// Write one HTML report over every run the campaign stored so far, in the order of its
    /// steps (each phase's latency plots, interrupted attempts marked), judged against the
    /// plan's budget.
    #[command(after_long_help = REPORT_AFTER)]
    Report(CampaignReportArgs),
}

/// `rtlab campaign report`'s options.
#[derive(Debug, Args)]
pub struct CampaignReportArgs {
    /// The state directory.
    #[arg(long, value_name = "DIR")]
    pub state: PathBuf,
    /// Where to write the HTML report. Default: DIR/report.html.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `rtlab campaign status --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CampaignFormat {
    /// Lines for people.
    Text,
    /// The rtlab.campaign/1 document.
    Json,
}
