//! How each surface words a run's verdict, read back for the verdict matrix: the `verdict:`
//! line of a command, a JUnit document's property checked against its counts, LAVA's last case
//! checked against the others, the CSV column, the OpenMetrics gauge, a page's heading or
//! table cell, `rtlab runs`' column.

/// A verdict as every surface words it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Word {
    Pass,
    Fail,
    CannotJudge,
}

impl Word {
    pub(crate) fn from_text(text: &str) -> Option<Word> {
        if text.starts_with("PASS") {
            Some(Word::Pass)
        } else if text.starts_with("FAIL") {
            Some(Word::Fail)
        } else if text.starts_with("CANNOT JUDGE") {
            Some(Word::CannotJudge)
        } else {
            None
        }
    }

    /// The exit status of a command that judged a run read back: 0 only for a pass.
    pub(crate) fn exit(self) -> i32 {
        match self {
            Word::Pass => 0,
            Word::Fail | Word::CannotJudge => 1,
        }
    }
}

/// The word after `verdict: ` on the last such line of a command's standard output.
pub(crate) fn verdict_line(stdout: &str) -> Option<Word> {
    stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("verdict: "))
        .and_then(Word::from_text)
}

/// The verdict a JUnit document renders: its `rtlab.verdict` property, checked against its
/// counts (a document that fails is one with failures or errors).
pub(crate) fn junit_word(xml: &str) -> Option<Word> {
    let value = xml
        .split("<property name=\"rtlab.verdict\" value=\"")
        .nth(1)?
        .split('"')
        .next()?;
    let word = word_of(value)?;
    let count = |what: &str| -> u64 {
        let at = xml.find("<testsuite ").expect("a suite");
        xml[at..]
            .split(&format!(" {what}=\""))
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|n| n.parse().ok())
            .expect("the suite's counts")
    };
    let red = count("failures") + count("errors") > 0;
    assert_eq!(
        red,
        word != Word::Pass,
        "the counts disagree with rtlab.verdict:\n{xml}"
    );
    Some(word)
}

/// The verdict LAVA cases render: the `verdict` case passes or fails; a failure is CANNOT
/// JUDGE when nothing but `run-status` failed with it.
pub(crate) fn lava_word(text: &str) -> Option<Word> {
    let results: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| {
            let l = l.strip_prefix("lava-test-case ").unwrap_or(l);
            let mut words = l.split_whitespace();
            let name = words.next()?;
            let result = match words.next()? {
                "--result" => words.next()?,
                r => r,
            };
            Some((name, result))
        })
        .collect();
    let verdict = results.iter().find(|(n, _)| *n == "verdict")?.1;
    let failed_criteria = results
        .iter()
        .any(|(n, r)| *r == "fail" && !matches!(*n, "verdict" | "run-status"));
    let unjudgeable = results
        .iter()
        .any(|(n, r)| *n == "run-status" && *r == "fail");
    Some(match (verdict, failed_criteria, unjudgeable) {
        ("pass", false, false) => Word::Pass,
        ("fail", true, _) => Word::Fail,
        ("fail", false, true) => Word::CannotJudge,
        _ => panic!("LAVA cases that disagree with their verdict case:\n{text}"),
    })
}

/// The verdict a CSV export renders: its `verdict` column, the same on every row.
pub(crate) fn csv_word(text: &str) -> Option<Word> {
    let mut rows = text
        .lines()
        .map(|l| l.rsplit(',').next().unwrap_or_default());
    assert_eq!(rows.next(), Some("verdict"), "{text}");
    let words: Vec<&str> = rows.collect();
    assert!(words.windows(2).all(|w| w[0] == w[1]), "{text}");
    word_of(words.first()?)
}

/// The verdict an OpenMetrics export renders: `rtlab_run_passed`'s `verdict` label, checked
/// against its value.
pub(crate) fn metrics_word(text: &str) -> Option<Word> {
    let line = text.lines().find(|l| l.starts_with("rtlab_run_passed{"))?;
    let value = line.split("verdict=\"").nth(1)?.split('"').next()?;
    let word = word_of(value)?;
    assert_eq!(line.ends_with(" 1"), word == Word::Pass, "{line}");
    Some(word)
}

/// `pass`, `fail`, `unjudgeable`: the verdict as machine-read documents word it.
pub(crate) fn word_of(value: &str) -> Option<Word> {
    match value {
        "pass" => Some(Word::Pass),
        "fail" => Some(Word::Fail),
        "unjudgeable" => Some(Word::CannotJudge),
        _ => None,
    }
}

/// The verdict an HTML page shows first: the heading of its verdict section.
pub(crate) fn page_word(html: &str) -> Option<Word> {
    let section = html.split("<section class=\"verdict").nth(1)?;
    let heading = section.split("<h2>").nth(1)?;
    Word::from_text(heading)
}

/// The verdict cell (`<td class="verdict">WORD</td>`) of the table row that holds `key`.
pub(crate) fn row_word(html: &str, key: &str) -> Option<Word> {
    let row = html.split("<tr").find(|row| row.contains(key))?;
    let cell = row.split("<td class=\"verdict\">").nth(1)?;
    Word::from_text(cell)
}

/// The verdict column of `rtlab runs`' line for run `id`: the text under the `verdict`
/// heading.
pub(crate) fn runs_word(text: &str, id: &str) -> Option<Word> {
    let header = text.lines().next()?;
    let at = header.find("verdict")?;
    let line = text.lines().find(|l| l.starts_with(id))?;
    Word::from_text(line.get(at..)?)
}
