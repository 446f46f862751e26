//! How an audit reads: the terminal table of `rtlab audit` (findings grouped by area, the fix
//! under each problem, a summary line) and the Markdown form for tickets and pull requests.
//!
//! Colour is the caller's: the table takes a function that decorates each status label, so
//! this crate stays free of escape codes.

use std::fmt::Write as _;

use model::audit::{AuditReport, AuditSummary, Finding, Group, Status};

/// How much of each finding the terminal table shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AuditStyle {
    /// Also show passing findings' evidence, and every finding's reason and evidence.
    pub verbose: bool,
}

/// The label of a finding in the table, padded to one width: its status, problems in capitals,
/// advice (`info`) in lower case like a pass.
pub fn status_label(finding: &Finding) -> &'static str {
    match finding.status {
        Status::Fail => "FAIL",
        Status::Warn => "WARN",
        Status::Info => "info",
        Status::Pass => "pass",
        Status::Unknown => "  ? ",
        Status::Error => "ERR!",
    }
}

/// The line that heads both forms: what was audited and against what.
fn header(report: &AuditReport) -> String {
    let rt = if report.rt_cpus.cpus.is_empty() {
        "no RT CPUs set apart".to_string()
    } else {
        format!(
            "RT {} (from {})",
            report.rt_cpus.cpus.with_noun(),
            report.rt_cpus.source
        )
    };
    format!(
        "rtlab audit: kernel {} {}, profile {}, {rt}",
        report.kernel_release,
        report.arch,
        report.profile.as_str()
    )
}

/// The closing summary line: counts by status and the time taken.
pub fn summary_line(report: &AuditReport) -> String {
    let c = report.counts;
    let mut parts = vec![format!("{} fail", c.fail), format!("{} warn", c.warn)];
    if c.info > 0 {
        parts.push(format!("{} info", c.info));
    }
    parts.push(format!("{} pass", c.pass));
    if c.unknown > 0 {
        parts.push(format!("{} unknown", c.unknown));
    }
    if c.error > 0 {
        parts.push(format!("{} error", c.error));
    }
    let total = c.total();
    format!(
        "{} ({total} {} in {} ms)",
        parts.join(", "),
        if total == 1 { "check" } else { "checks" },
        report.elapsed_us.div_ceil(1000)
    )
}

/// The findings of each group that has any, in report order.
fn grouped(report: &AuditReport) -> impl Iterator<Item = (Group, Vec<&Finding>)> {
    Group::ALL.into_iter().filter_map(|group| {
        let findings: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.group == group)
            .collect();
        (!findings.is_empty()).then_some((group, findings))
    })
}

/// The terminal table. `paint` decorates a status label (identity for plain text). Ends
/// with a newline.
pub fn audit_table(
    report: &AuditReport,
    style: AuditStyle,
    paint: &dyn Fn(Status, &str) -> String,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", header(report));
    let id_width = report
        .findings
        .iter()
        .map(|f| f.id.len())
        .max()
        .unwrap_or(0);
    for (group, findings) in grouped(report) {
        let _ = writeln!(out, "\n{}", group.title());
        for f in findings {
            let label = paint(f.status, status_label(f));
            let _ = writeln!(out, "  {label}  {:<id_width$}  {}", f.id, f.summary);
            let indent = " ".repeat(2 + 4 + 2 + id_width + 2);
            let problem = !matches!(f.status, Status::Pass);
            if style.verbose {
                let _ = writeln!(out, "{indent}why: {}", f.why);
            }
            if style.verbose || problem {
                for e in f
                    .evidence
                    .iter()
                    .take(if style.verbose { usize::MAX } else { 2 })
                {
                    let _ = writeln!(out, "{indent}seen: {} = {}", e.source, e.value);
                }
            }
            for fix in &f.fix {
                let _ = writeln!(out, "{indent}fix: {}", fix.render());
            }
        }
    }
    let _ = writeln!(out, "\n{}", summary_line(report));
    out
}

/// The line under `rtlab measure`'s table naming the audit's problems, so a reader of the
/// figures knows what the machine lacks; `None` when nothing failed or warned.
pub fn measure_audit_line(summary: &AuditSummary) -> Option<String> {
    let c = summary.counts;
    if c.fail + c.warn == 0 {
        return None;
    }
    let failing: Vec<&str> = summary
        .top
        .iter()
        .filter(|i| i.status == Status::Fail)
        .map(|i| i.id.as_str())
        .collect();
    let named = if failing.is_empty() {
        String::new()
    } else {
        format!(" ({})", failing.join(", "))
    };
    Some(format!(
        "audit: {} fail{named}, {} warn; `rtlab audit` shows the evidence and fixes",
        c.fail, c.warn
    ))
}

/// Escapes text for a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The Markdown form: a summary, one table per group, then the details (why, evidence, fix)
/// of every finding that is not a pass. Ends with a newline.
pub fn audit_markdown(report: &AuditReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Real-time readiness audit\n");
    let _ = writeln!(out, "{}\n", header(report));
    let _ = writeln!(out, "**{}**", summary_line(report));
    for (group, findings) in grouped(report) {
        let _ = writeln!(out, "\n## {}\n", group.title());
        let _ = writeln!(out, "| status | check | finding |");
        let _ = writeln!(out, "| --- | --- | --- |");
        for f in findings {
            let _ = writeln!(
                out,
                "| {} | `{}` | {} |",
                f.status.as_str(),
                f.id,
                cell(&f.summary)
            );
        }
    }
    let problems: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.status != Status::Pass)
        .collect();
    if !problems.is_empty() {
        let _ = writeln!(out, "\n## Details");
        for f in problems {
            let _ = writeln!(
                out,
                "\n### `{}` ({}, severity {}): {}\n",
                f.id,
                f.status.as_str(),
                f.severity.as_str(),
                f.title
            );
            let _ = writeln!(out, "{}\n", f.summary);
            let _ = writeln!(out, "Why it matters: {}.\n", f.why);
            for e in &f.evidence {
                let _ = writeln!(
                    out,
                    "- seen in `{}`: `{}`",
                    e.source,
                    e.value.replace('`', "'")
                );
            }
            if !f.fix.is_empty() {
                let _ = writeln!(out, "\nFix:\n\n```sh");
                for fix in &f.fix {
                    let _ = writeln!(out, "{}", fix.render());
                }
                let _ = writeln!(out, "```");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::CpuSet;
    use model::audit::{Counts, Evidence, Fix, Profile, RtCpus, SCHEMA, Severity};

    fn finding(id: &str, group: Group, status: Status, summary: &str) -> Finding {
        Finding {
            id: id.into(),
            title: "title".into(),
            group,
            severity: Severity::Warn,
            status,
            summary: summary.into(),
            evidence: vec![Evidence {
                source: "/proc/x".into(),
                value: "1".into(),
            }],
            why: "reason".into(),
            fix: if status == Status::Pass {
                vec![]
            } else {
                vec![Fix::Write {
                    path: "/proc/x".into(),
                    value: "0".into(),
                }]
            },
        }
    }

    fn report() -> AuditReport {
        let findings = vec![
            finding("kernel.a", Group::Kernel, Status::Fail, "not RT | sadly"),
            finding("sched.bb", Group::Sched, Status::Pass, "fine"),
            finding("sched.c", Group::Sched, Status::Unknown, "cannot read"),
        ];
        AuditReport {
            schema: SCHEMA.into(),
            rtlab_version: "0.1.0".into(),
            build: None,
            kernel_release: "6.1.0".into(),
            arch: "x86_64".into(),
            profile: Profile::Production,
            rt_cpus: RtCpus {
                cpus: CpuSet::parse_list("2-3").unwrap(),
                source: "isolcpus".into(),
            },
            elapsed_us: 1500,
            counts: Counts::of(&findings),
            findings,
        }
    }

    #[test]
    fn table_groups_findings_and_shows_fixes_under_problems() {
        let text = audit_table(&report(), AuditStyle::default(), &|_, l| l.to_string());
        let expected = "\
rtlab audit: kernel 6.1.0 x86_64, profile production, RT CPUs 2-3 (from isolcpus)

Kernel
  FAIL  kernel.a  not RT | sadly
                  seen: /proc/x = 1
                  fix: echo 0 > /proc/x

Scheduler and memory
  pass  sched.bb  fine
    ?   sched.c   cannot read
                  seen: /proc/x = 1
                  fix: echo 0 > /proc/x

1 fail, 0 warn, 1 pass, 1 unknown (3 checks in 2 ms)
";
        assert_eq!(text, expected);
        let painted = audit_table(&report(), AuditStyle::default(), &|s, l| {
            format!("<{}>{l}", s.as_str())
        });
        assert!(painted.contains("<fail>FAIL  kernel.a"));
        let verbose = audit_table(&report(), AuditStyle { verbose: true }, &|_, l| {
            l.to_string()
        });
        assert!(verbose.contains("why: reason"));
    }

    #[test]
    fn markdown_escapes_cells_and_details_problems() {
        let md = audit_markdown(&report());
        assert!(
            md.contains("| fail | `kernel.a` | not RT \\| sadly |"),
            "{md}"
        );
        assert!(md.contains("### `kernel.a` (fail, severity warn): title"));
        assert!(md.contains("```sh\necho 0 > /proc/x\n```"));
        assert!(!md.contains("### `sched.bb`"));
    }

    #[test]
    fn advice_is_a_status_of_its_own() {
        let w = finding("cmdline.rcu", Group::Cmdline, Status::Warn, "no rcu_nocbs=");
        assert_eq!(status_label(&w), "WARN");
        let mut f = finding("cmdline.tsc", Group::Cmdline, Status::Info, "no tsc=");
        f.severity = Severity::Info;
        assert_eq!(status_label(&f), "info");
        let mut r = report();
        r.findings.push(w);
        r.findings.push(f);
        r.counts = Counts::of(&r.findings);
        assert_eq!(
            summary_line(&r),
            "1 fail, 1 warn, 1 info, 1 pass, 1 unknown (5 checks in 2 ms)"
        );
        // Advice is not a problem the measure line names.
        r.findings.retain(|f| f.status == Status::Info);
        r.counts = Counts::of(&r.findings);
        assert_eq!(measure_audit_line(&r.summary()), None);
        assert_eq!(
            summary_line(&r),
            "0 fail, 0 warn, 1 info, 0 pass (1 check in 2 ms)"
        );
    }

    #[test]
    fn measure_line_names_failures() {
        let line = measure_audit_line(&report().summary()).unwrap();
        assert_eq!(
            line,
            "audit: 1 fail (kernel.a), 0 warn; `rtlab audit` shows the evidence and fixes"
        );
        let mut clean = report();
        clean.findings.retain(|f| f.status == Status::Pass);
        clean.counts = Counts::of(&clean.findings);
        assert_eq!(measure_audit_line(&clean.summary()), None);
    }
}
