//! A measurement as CSV: one header row, one row per measured CPU, then the `all` row.
//!
//! Columns: `host,kernel,started_at,status,judgeable,cpu,samples,min_ns,mean_ns,stddev_ns,
//! p50_ns,p90_ns,p99_ns,p99_9_ns,p99_99_ns,p99_999_ns,max_ns,overruns,label,load,verdict`. The run id is
//! not known to a renderer; the host, kernel release and start time identify the run when rows
//! of several runs are pasted into one sheet, and `label` (a stored run's label, given by the
//! caller) and `load` (the load spec it measured under) tell apart runs of one machine; both
//! are empty when the run has none. They come last, so the older columns keep their places. `status` is the run's (`complete`, `interrupted`, `running`
//! for the checkpoint of a run that never finished, `broke-threshold`); `judgeable` is `true`
//! when its figures may pass a gate and `false` when no gate may pass on them
//! ([`MeasureRun::unjudgeable`]: unfinished, stopped at `--break`, or a CPU without samples),
//! so a sheet or script filtering on it never mistakes an empty row for a good one. `verdict`,
//! on every row, is the run's: the gate's ([`model::gate::judge`]) against the budget it was
//! measured with or one given to `export` (`pass`, `fail`, `unjudgeable`), the verdict every
//! surface shows and the export's exit status stands for.
//!
//! Units: every latency is an integer count of nanoseconds, as in the JSON schema (whose field
//! names the columns reuse): min, max and the percentiles are exact integers already, and the
//! mean and standard deviation are rounded half up to whole nanoseconds (below any clock's
//! resolution). Integers survive every spreadsheet and locale unchanged (no decimal comma, no
//! float rounding); a sheet that wants microseconds divides by 1000. A figure the run does not
//! have (a CPU without samples) is an empty field.
//!
//! Quoting follows RFC 4180: a field holding a comma, a double quote, CR or LF is enclosed in
//! double quotes and its quotes are doubled; the hostname, kernel release, label and load spec
//! are the only fields that can need it. Records end with LF, not RFC 4180's CRLF, so the output reads well
//! in `cut`, `awk` and `column` too; spreadsheets and CSV libraries accept both. Fields are not
//! altered to defuse spreadsheet formulas (a hostname starting with `=`): the export is data,
//! and kernel hostnames cannot normally contain such text.

use model::gate::Verdict;
use model::measure::MeasureRun;
use model::stats::LatencyStats;

/// The header row, in column order.
pub const HEADER: [&str; 21] = [
    "host",
    "kernel",
    "started_at",
    "status",
    "judgeable",
    "cpu",
    "samples",
    "min_ns",
    "mean_ns",
    "stddev_ns",
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p99_9_ns",
    "p99_99_ns",
    "p99_999_ns",
    "max_ns",
    "overruns",
    "label",
    "load",
    "verdict",
];

/// The run as CSV, judged against its own criteria: the header row, one row per CPU in the
/// run's order, then the `all` row. Every record, the last included, ends with `\n`.
pub fn csv(run: &MeasureRun) -> String {
    csv_labelled(run, &model::gate::judge(run, None), None)
}

/// [`csv`] of a run rendering `verdict` (the gate's on it), with a `label` (a stored run's)
/// written in the `label` column.
pub fn csv_labelled(run: &MeasureRun, verdict: &Verdict, label: Option<&str>) -> String {
    let mut out = String::new();
    push_record(&mut out, HEADER.iter().map(|h| h.to_string()));
    let names = [
        label.unwrap_or_default().to_string(),
        run.load
            .as_ref()
            .map(|l| l.spec.clone())
            .unwrap_or_default(),
        verdict.outcome().as_str().to_string(),
    ];
    for c in &run.cpus {
        let cells = row(run, c.cpu.to_string(), &c.stats);
        push_record(&mut out, cells.chain(names.clone()));
    }
    let cells = row(run, "all".to_string(), &run.all.stats);
    push_record(&mut out, cells.chain(names));
    out
}

fn row(run: &MeasureRun, cpu: String, s: &LatencyStats) -> impl Iterator<Item = String> {
    let int = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    // `as` saturates; the model never produces a negative or NaN mean.
    let round = |v: Option<f64>| int(v.map(|v| v.round() as u64));
    [
        run.host.hostname.clone(),
        run.host.kernel_release.clone(),
        run.started_at.clone(),
        run.status.as_str().to_string(),
        run.unjudgeable().is_none().to_string(),
        cpu,
        s.count.to_string(),
        int(s.min_ns),
        round(s.mean_ns),
        round(s.stddev_ns),
        int(s.p50_ns),
        int(s.p90_ns),
        int(s.p99_ns),
        int(s.p99_9_ns),
        int(s.p99_99_ns),
        int(s.p99_999_ns),
        int(s.max_ns),
        s.overruns.to_string(),
    ]
    .into_iter()
}

/// Appends one record: fields joined by commas, quoted where RFC 4180 needs it, then `\n`.
pub(crate) fn push_record(out: &mut String, fields: impl Iterator<Item = String>) {
    for (i, field) in fields.enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_field(out, &field);
    }
    out.push('\n');
}

fn push_field(out: &mut String, field: &str) {
    if field.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&field.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(field);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;

    #[test]
    fn two_cpus_exactly() {
        let expected = "\
host,kernel,started_at,status,judgeable,cpu,samples,min_ns,mean_ns,stddev_ns,p50_ns,p90_ns,p99_ns,p99_9_ns,p99_99_ns,p99_999_ns,max_ns,overruns,label,load,verdict
rt-box,6.1.0-50-rt-amd64,2026-01-12T11:52:32Z,complete,true,0,4,12345,26861,22617,14103,66000,66000,66000,66000,66000,66000,0,,,pass
rt-box,6.1.0-50-rt-amd64,2026-01-12T11:52:32Z,complete,true,1,3,13000,92333,111488,13999,250000,250000,250000,250000,250000,250000,1,,,pass
rt-box,6.1.0-50-rt-amd64,2026-01-12T11:52:32Z,complete,true,all,7,12345,54921,81664,14103,250000,250000,250000,250000,250000,250000,1,,,pass
";
        assert_eq!(csv(&testdata::two_cpus()), expected);
    }

    #[test]
    fn figures_are_the_runs_statistics() {
        let run = testdata::two_cpus();
        let text = csv(&run);
        let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), run.cpus.len() + 2);
        assert!(rows.iter().all(|r| r.len() == HEADER.len()));
        let col = |name: &str| HEADER.iter().position(|h| *h == name).unwrap();
        for (r, c) in rows[1..].iter().zip(&run.cpus) {
            assert_eq!(r[col("cpu")], c.cpu.to_string());
            assert_eq!(r[col("samples")], c.stats.count.to_string());
            assert_eq!(r[col("max_ns")], c.stats.max_ns.unwrap().to_string());
            assert_eq!(r[col("p99_9_ns")], c.stats.p99_9_ns.unwrap().to_string());
            assert_eq!(r[col("overruns")], c.stats.overruns.to_string());
        }
    }

    #[test]
    fn empty_cpu_has_empty_fields() {
        let text = csv(&testdata::one_empty_cpu());
        let row = text.lines().nth(2).unwrap();
        assert_eq!(
            row,
            "rt-box,6.1.0-50-rt-amd64,2026-01-12T11:52:32Z,complete,false,1,0,,,,,,,,,,,0,,,unjudgeable"
        );
    }

    #[test]
    fn label_and_load_tell_runs_apart() {
        let mut run = testdata::two_cpus();
        run.load = Some(model::load::LoadReport {
            schema: model::load::report::LOAD_SCHEMA.into(),
            build: None,
            spec: "cpu:100%,timer-storm".into(),
            window_ns: model::Nanos::from_secs(1),
            warmup_ns: model::Nanos::ZERO,
            status: "complete".into(),
            cgroup: None,
            generators: Vec::new(),
            cpu_busy: Vec::new(),
        });
        let verdict = model::gate::judge(&run, Some(model::Nanos::from_us(100)));
        let text = csv_labelled(&run, &verdict, Some("full load, tuned"));
        for row in text.lines().skip(1) {
            assert!(
                row.ends_with(",1,\"full load, tuned\",\"cpu:100%,timer-storm\",fail")
                    || row.ends_with(",0,\"full load, tuned\",\"cpu:100%,timer-storm\",fail"),
                "{row}"
            );
        }
        let xml = crate::export::junit_labelled(
            &run,
            &model::gate::judge(&run, Some(model::Nanos::from_us(100))),
            Some("idle"),
        );
        assert!(
            xml.contains("<testsuite name=\"rtlab measure rt-box: idle\""),
            "{xml}"
        );
        assert!(
            xml.contains("<property name=\"label\" value=\"idle\"/>"),
            "{xml}"
        );
        assert!(xml.contains("<property name=\"load\" value=\"cpu:100%,timer-storm\"/>"));
    }

    #[test]
    fn above_range_sample_is_exact() {
        let run = testdata::above_range();
        let text = csv(&run);
        let row: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(row[16], run.cpus[0].raw.max_ns.to_string());
    }

    /// Splits RFC 4180 text back into records, the way a spreadsheet reads it.
    fn parse(text: &str) -> Vec<Vec<String>> {
        let mut records = Vec::new();
        let mut record = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        let mut chars = text.chars().peekable();
        while let Some(ch) = chars.next() {
            match (quoted, ch) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                (true, '"') => quoted = false,
                (true, ch) => field.push(ch),
                (false, '"') if field.is_empty() => quoted = true,
                (false, ',') => record.push(std::mem::take(&mut field)),
                (false, '\n') => {
                    record.push(std::mem::take(&mut field));
                    records.push(std::mem::take(&mut record));
                }
                (false, ch) => field.push(ch),
            }
        }
        assert!(
            !quoted && field.is_empty() && record.is_empty(),
            "unterminated"
        );
        records
    }

    #[test]
    fn awkward_hostnames_are_quoted_and_round_trip() {
        for host in [
            "a,b",
            "say \"hi\"",
            "two\nlines",
            "cr\rlf",
            "\"",
            ",",
            "plain-host",
            "",
        ] {
            let mut run = testdata::two_cpus();
            run.host.hostname = host.to_string();
            run.host.kernel_release = format!("6.1,{host}");
            let records = parse(&csv(&run));
            assert_eq!(records.len(), 4, "{host:?}");
            for r in &records[1..] {
                assert_eq!(r.len(), HEADER.len(), "{host:?}");
                assert_eq!(r[0], host);
                assert_eq!(r[1], format!("6.1,{host}"));
            }
        }
        let mut run = testdata::two_cpus();
        run.host.hostname = "a\"b,c".to_string();
        assert!(csv(&run).contains("\n\"a\"\"b,c\",6.1.0"));
    }
}
