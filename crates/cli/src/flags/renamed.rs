//! Spellings the one vocabulary replaced (docs/cli-conventions.md). Each still works for one
//! release, as a hidden clap alias, and [`notices`] says once per spelling what to type instead.
//! CHANGELOG.md lists the same table under "Renamed".

use std::ffi::OsString;

/// One replaced spelling: a flag, or a value of a flag.
#[derive(Clone, Copy, Debug)]
pub struct Renamed {
    /// The top-level command it belonged to; `None` for every command.
    pub command: Option<&'static str>,
    /// The old flag (`--json`).
    pub flag: &'static str,
    /// For a renamed value: the old value of `flag` (`table`); `None` for a renamed flag.
    pub value: Option<&'static str>,
    /// What to type instead.
    pub instead: &'static str,
}

/// Every replaced spelling, with its replacement.
pub const RENAMED: &[Renamed] = &[
    // One name per idea (issue #48): how many of the worst to keep or list is --spikes, the
    // limit a verdict holds to is --budget, the trace's ring buffer is --trace-buffer, how
    // long to retry a push is --retry-for.
    Renamed {
        command: Some("compare"),
        flag: "--worst",
        value: None,
        instead: "--worst-case",
    },
    Renamed {
        command: Some("explain"),
        flag: "--worst",
        value: None,
        instead: "--spikes N",
    },
    Renamed {
        command: Some("hwlat"),
        flag: "--samples",
        value: None,
        instead: "--spikes N",
    },
    Renamed {
        command: Some("hwlat"),
        flag: "--hardlimit",
        value: None,
        instead: "--budget TIME",
    },
    Renamed {
        command: Some("trace"),
        flag: "--buffer",
        value: None,
        instead: "--trace-buffer KIB",
    },
    Renamed {
        command: Some("worst"),
        flag: "--width",
        value: None,
        instead: "--interval-width TIME",
    },
    Renamed {
        command: Some("push"),
        flag: "--status",
        value: None,
        instead: "--queue",
    },
    Renamed {
        command: Some("explain"),
        flag: "--top",
        value: None,
        instead: "--limit N",
    },
    Renamed {
        command: Some("serve"),
        flag: "--regression",
        value: None,
        instead: "--fail-if-worse PCT",
    },
    Renamed {
        command: Some("measure"),
        flag: "--deadline",
        value: None,
        instead: "--workload-deadline TIME",
    },
    Renamed {
        command: None,
        flag: "--push-retry-for",
        value: None,
        instead: "--retry-for TIME",
    },
    Renamed {
        command: Some("load"),
        flag: "--json",
        value: None,
        instead: "-o/--output FILE",
    },
    Renamed {
        command: Some("measure"),
        flag: "--fail-above",
        value: None,
        instead: "--budget TIME",
    },
    Renamed {
        command: Some("explain"),
        flag: "--threshold",
        value: None,
        instead: "--budget TIME",
    },
    Renamed {
        command: Some("man"),
        flag: "--out",
        value: None,
        instead: "-o/--output DIR",
    },
    Renamed {
        command: Some("audit"),
        flag: "--profile",
        value: None,
        instead: "--kernel-build production|debug (--profile is the tuning profile)",
    },
    Renamed {
        command: None,
        flag: "--format",
        value: Some("table"),
        instead: "--format text",
    },
    Renamed {
        command: Some("noise"),
        flag: "--json",
        value: None,
        instead: "--format json",
    },
    Renamed {
        command: Some("hwlat"),
        flag: "--json",
        value: None,
        instead: "--format json",
    },
    Renamed {
        command: Some("inspect"),
        flag: "--json",
        value: None,
        instead: "--format json",
    },
    Renamed {
        command: Some("pi"),
        flag: "--json",
        value: None,
        instead: "--format json",
    },
    Renamed {
        command: Some("push"),
        flag: "--json",
        value: None,
        instead: "--format json",
    },
    Renamed {
        command: Some("sched"),
        flag: "--json",
        value: None,
        instead: "--format json",
    },
    Renamed {
        command: Some("serve"),
        flag: "--json",
        value: None,
        instead: "--format json",
    },
    Renamed {
        command: Some("exec"),
        flag: "--fifo",
        value: None,
        instead: "--policy fifo --priority PRIO",
    },
    Renamed {
        command: Some("exec"),
        flag: "--rr",
        value: None,
        instead: "--policy rr --priority PRIO",
    },
    Renamed {
        command: Some("exec"),
        flag: "--force",
        value: None,
        instead: "--allow-prio-99",
    },
    Renamed {
        command: Some("run"),
        flag: "--phase",
        value: None,
        instead: "-D/--duration TIME (of each phase)",
    },
];

/// The warnings for the replaced spellings in `args` (the whole command line, program name
/// first), one per spelling used, in [`RENAMED`] order.
///
/// Only rtlab's own arguments are looked at: scanning stops at `--` and at the command that
/// `rtlab tune run` starts.
pub fn notices(args: &[OsString]) -> Vec<String> {
    let words: Vec<&str> = args.iter().skip(1).filter_map(|a| a.to_str()).collect();
    let words = own_words(&words);
    let command = top_command(words);
    RENAMED
        .iter()
        .filter(|r| r.command.is_none_or(|c| Some(c) == command))
        .filter(|r| used(words, r))
        .map(|r| {
            let old = match r.value {
                Some(v) => format!("{} {v}", r.flag),
                None => r.flag.to_string(),
            };
            format!(
                "{old} is now {}; the old spelling goes in the next release",
                r.instead
            )
        })
        .collect()
}

/// The words rtlab itself parses: up to `--`, and up to the command of `tune run`.
fn own_words<'a>(words: &'a [&'a str]) -> &'a [&'a str] {
    let end = words.iter().position(|w| *w == "--").unwrap_or(words.len());
    let words = &words[..end];
    let positional: Vec<usize> = positions(words);
    if let [first, second, third, ..] = positional[..]
        && words[first] == "tune"
        && words[second] == "run"
    {
        return &words[..third];
    }
    words
}

/// Indexes of the words that are not flags or the value of `--root`.
fn positions(words: &[&str]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut skip = false;
    for (i, w) in words.iter().enumerate() {
        if skip {
            skip = false;
        } else if *w == "--root" {
            skip = true;
        } else if !w.starts_with('-') {
            out.push(i);
        }
    }
    out
}

/// The top-level command (the first word that is not a global option).
fn top_command<'a>(words: &[&'a str]) -> Option<&'a str> {
    positions(words).first().map(|&i| words[i])
}

fn used(words: &[&str], r: &Renamed) -> bool {
    words.iter().enumerate().any(|(i, w)| {
        let inline = w
            .strip_prefix(r.flag)
            .and_then(|rest| rest.strip_prefix('='));
        match r.value {
            None => *w == r.flag || inline.is_some(),
            Some(v) => inline == Some(v) || (*w == r.flag && words.get(i + 1) == Some(&v)),
        }
    })
}

#[cfg(test)]
mod tests {
    /// The "Replaced spellings" table in docs/cli-conventions.md is [`RENAMED`] (a spelling
    /// renamed and not listed there misled the help's readers; issue #48).
    #[test]
    fn the_replaced_spellings_table_in_the_docs_is_renamed() {
        let mut rows: Vec<(String, String, Vec<&str>)> = Vec::new();
        for r in RENAMED {
            let old = match r.value {
                Some(v) => format!("`{} {v}`", r.flag),
                None => format!("`{}`", r.flag),
            };
            let new = format!("`{}`", r.instead);
            let command = r.command.unwrap_or("every command");
            match rows.iter_mut().find(|(o, n, _)| *o == old && *n == new) {
                Some(row) => row.2.push(command),
                None => rows.push((old, new, vec![command])),
            }
        }
        let mut table = String::from("| old | new | command |\n| --- | --- | --- |\n");
        for (old, new, commands) in rows {
            let cell = |t: &str| t.replace('|', "\\|");
            table.push_str(&format!(
                "| {} | {} | {} |\n",
                cell(&old),
                cell(&new),
                commands.join(", ")
            ));
        }
        super::super::ideas::docs_table(
            "<!-- replaced spellings: generated by crates/cli/src/flags/renamed.rs -->\n",
            "<!-- end of the replaced spellings -->\n",
            &table,
            "replaced spellings table is not RENAMED's; RTLAB_BLESS=1 cargo test -p rtlab --bin rtlab replaced_spellings writes it",
        );
    }

    use super::*;

    fn line(text: &str) -> Vec<OsString> {
        std::iter::once("rtlab")
            .chain(text.split_whitespace())
            .map(OsString::from)
            .collect()
    }

    #[test]
    fn each_old_spelling_warns_once_and_still_parses() {
        for (text, expect) in [
            ("measure -o r.json --fail-above 50us", 1),
            ("load cpu --json l.json", 1),
            ("man --out /tmp/m", 1),
            ("audit --profile debug", 1),
            ("explain irqs t.txt --threshold 20us", 1),
            ("runs --format table", 1),
            ("measure --format=table -o a", 1),
            ("show last --format=table", 1),
            ("noise --json", 1),
            ("hwlat --engine user --json", 1),
            ("inspect 1 --json", 1),
            ("pi check --json", 1),
            ("push --status --json", 2),
            ("sched check t.toml --json", 1),
            ("exec --fifo 10 -- true", 1),
            ("exec --rr 10 --force -- true", 2),
            ("run --phase 1s", 1),
            ("compare a b --worst", 1),
            ("explain t.txt --worst 2", 1),
            ("hwlat --samples 3 --hardlimit 50us", 2),
            ("trace record -o t.dat --buffer 1024", 1),
            ("worst last --width 5us", 1),
            ("measure --push http://s:1 --push-retry-for 1s", 1),
            ("explain irqs t.txt --top 5", 1),
            ("serve --regression 10", 1),
            ("measure --workload 100us --deadline 500us", 1),
        ] {
            let args = line(text);
            assert_eq!(notices(&args).len(), expect, "{text}: {:?}", notices(&args));
            super::super::parse(&args).unwrap_or_else(|e| panic!("{text}: {e}"));
        }
    }

    #[test]
    fn new_spellings_and_other_commands_do_not_warn() {
        for text in [
            "measure -o r.json --budget 50us --format text",
            "run --tuned --rt-cpus 2 --profile strict",
            "tune plan --rt-cpus 2 --profile strict",
            "tune run -- rtlab measure --json x",
            "tune run rtlab measure --json x",
            "exec -p 10 -- prog --force --json",
            "run -D 1s --format json",
            "noise --format json",
            "--root /tmp/tree audit --kernel-build debug",
            "runs --label --format",
        ] {
            assert!(notices(&line(text)).is_empty(), "{text}");
        }
    }
}
