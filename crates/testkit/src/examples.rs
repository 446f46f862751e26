//! The rtlab commands that documentation shows — README code blocks and the EXAMPLES (and
//! EQUIVALENTS) sections of `--help` — taken out of their prose and shell, so that tests can
//! parse or run every one of them and an example cannot rot.
//!
//! A shown command is cut at the first unquoted `|`, `>`, `<`, `;` or `&&`; a `sudo` in front is
//! dropped; a comment after three or more spaces (the help's layout) is dropped; lines ending
//! in `\` continue on the next. Several rtlab commands on one line (`a; rtlab b`) each count.

/// One rtlab command as documentation shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Example {
    /// Where it was found: `README.md:66` or `rtlab measure --help`.
    pub source: String,
    /// The command as written (after the cuts above).
    pub text: String,
    /// Its words after shell quoting, starting with `rtlab`.
    pub words: Vec<String>,
    /// The output lines the documentation shows under it (README blocks with `$` prompts);
    /// an `rtlab: error:` line among them means the example shows a refusal.
    pub shows: Vec<String>,
}

impl Example {
    /// Whether the documentation shows this command being refused (`rtlab: error: ...`).
    pub fn shows_error(&self) -> bool {
        self.shows.iter().any(|l| l.starts_with("rtlab: error:"))
    }
}

/// The rtlab commands in the fenced code blocks of a Markdown text. `cargo run --release --`
/// counts as `rtlab`. In a block with `$ ` prompts only the prompted lines are commands, and
/// the lines after each are what it shows; in a block without prompts every line is one.
pub fn from_markdown(text: &str, name: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut block: Option<Vec<(usize, String)>> = None;
    for (n, line) in joined_lines(text) {
        if line.trim_start().starts_with("```") {
            match block.take() {
                Some(lines) => out.extend(block_commands(&lines, name)),
                None => block = Some(Vec::new()),
            }
            continue;
        }
        if let Some(lines) = block.as_mut() {
            lines.push((n, line));
        }
    }
    out
}

/// The commands of one code block (see [`from_markdown`]).
fn block_commands(lines: &[(usize, String)], name: &str) -> Vec<Example> {
    let prompted = lines.iter().any(|(_, l)| l.trim_start().starts_with("$ "));
    let mut out: Vec<Example> = Vec::new();
    let mut last_prompt_commands = 0;
    for (n, line) in lines {
        let line = line.trim();
        let command = match line.strip_prefix("$ ") {
            Some(c) => c,
            None if prompted => {
                let start = out.len() - last_prompt_commands;
                for ex in &mut out[start..] {
                    ex.shows.push(line.to_string());
                }
                continue;
            }
            None => line,
        };
        let command = match command.strip_prefix("cargo run --release -- ") {
            Some(rest) => format!("rtlab {rest}"),
            None if command == "cargo run --release --" => "rtlab".to_string(),
            None => command.to_string(),
        };
        let found = commands_in(&command, &format!("{name}:{n}"));
        last_prompt_commands = found.len();
        out.extend(found);
    }
    out
}

/// The rtlab commands in a help text's `EXAMPLES:` and `...EQUIVALENTS:` sections.
pub fn from_help(text: &str, name: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut in_examples = false;
    for (_, line) in joined_lines(text) {
        let trimmed = line.trim();
        if !line.starts_with(' ') && trimmed.ends_with(':') {
            in_examples = trimmed == "EXAMPLES:" || trimmed.ends_with("EQUIVALENTS:");
            continue;
        }
        if !in_examples || trimmed.is_empty() {
            continue;
        }
        // The comment column: three or more spaces after the command.
        let command = match trimmed.find("   ") {
            Some(at) => &trimmed[..at],
            None => trimmed,
        };
        // An equivalents line names the other tool first: `cyclictest ...   rtlab ...`.
        let command = match trimmed.find("   ") {
            Some(_) if !command.contains("rtlab") => trimmed[command.len()..].trim(),
            _ => command,
        };
        let command = match command.find("   ") {
            Some(at) => &command[..at],
            None => command,
        };
        out.extend(commands_in(command, name));
    }
    out
}

/// The lines of `text`, 1-based, with `\`-continued lines joined to the first.
fn joined_lines(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let (n, mut acc) = pending.take().unwrap_or((i + 1, String::new()));
        if !acc.is_empty() {
            acc.push(' ');
            acc.push_str(line.trim());
        } else {
            acc.push_str(line);
        }
        match acc.strip_suffix('\\') {
            Some(head) => pending = Some((n, head.trim_end().to_string())),
            None => out.push((n, acc)),
        }
    }
    out.extend(pending);
    out
}

/// Every rtlab command in one shell line.
fn commands_in(line: &str, source: &str) -> Vec<Example> {
    let mut out = Vec::new();
    for segment in segments(line) {
        let mut words = segment.words;
        if words.first().is_some_and(|w| w == "sudo") {
            words.remove(0);
        }
        if words.first().is_some_and(|w| w == "rtlab") {
            out.push(Example {
                source: source.to_string(),
                text: segment.text.trim().trim_start_matches("sudo ").to_string(),
                words,
                shows: Vec::new(),
            });
        }
    }
    out
}

struct Segment {
    text: String,
    words: Vec<String>,
}

/// Splits a shell line into commands at unquoted `;`, `&&` and `|`, dropping redirections
/// (`> file`, `2>&1`, `< file`) and their targets, and each command into words (single and
/// double quotes, backslash escapes).
fn segments(line: &str) -> Vec<Segment> {
    let mut s = Splitter::default();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if let Some(q) = s.quote {
            s.quoted(c, q, &mut chars);
            continue;
        }
        match c {
            '\'' | '"' => {
                s.quote = Some(c);
                s.in_word = true;
                s.text.push(c);
            }
            '\\' => {
                if let Some(n) = chars.next() {
                    s.word.push(n);
                    s.in_word = true;
                }
            }
            ' ' | '\t' => {
                s.flush();
                if !s.redirect {
                    s.text.push(' ');
                }
            }
            ';' | '|' | '&' => s.separator(c, &mut chars),
            '>' | '<' => s.redirection(&mut chars),
            _ => {
                s.word.push(c);
                s.in_word = true;
                if !s.redirect {
                    s.text.push(c);
                }
            }
        }
    }
    s.flush();
    s.out.push(Segment {
        text: s.text,
        words: s.words,
    });
    s.out
}

/// The characters of a line, with one of look-ahead.
type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

/// Where [`segments`] is in a line.
#[derive(Default)]
struct Splitter {
    /// The commands so far.
    out: Vec<Segment>,
    /// The words of the current command.
    words: Vec<String>,
    /// The current word.
    word: String,
    /// Whether a word has begun (an empty quoted word counts).
    in_word: bool,
    /// The current command's text, redirections left out.
    text: String,
    /// Whether the next word is a redirection's target.
    redirect: bool,
    /// The quote the current word is inside.
    quote: Option<char>,
}

impl Splitter {
    /// Ends the current word: kept, or dropped when it is a redirection's target.
    fn flush(&mut self) {
        if self.in_word {
            if !self.redirect {
                self.words.push(std::mem::take(&mut self.word));
            } else {
                self.word.clear();
                self.redirect = false;
            }
            self.in_word = false;
        }
    }

    /// `c` inside the quote `q`: the closing quote, a backslash escape (in double quotes),
    /// or part of the word.
    fn quoted(&mut self, c: char, q: char, chars: &mut Chars<'_>) {
        if c == q {
            self.quote = None;
        } else if c == '\\' && q == '"' {
            if let Some(n) = chars.next() {
                self.word.push(n);
            }
        } else {
            self.word.push(c);
        }
        if !self.redirect {
            self.text.push(c);
        }
    }

    /// `c` one of `;`, `|`, `&`: `;`, `|`, `||` and `&&` end the command; a lone `&` is part
    /// of a redirection (`2>&1`).
    fn separator(&mut self, c: char, chars: &mut Chars<'_>) {
        if c == '&' && chars.peek() != Some(&'&') {
            return;
        }
        if c == '&' || (c == '|' && chars.peek() == Some(&'|')) {
            chars.next();
        }
        self.flush();
        self.out.push(Segment {
            text: std::mem::take(&mut self.text),
            words: std::mem::take(&mut self.words),
        });
        self.redirect = false;
    }

    /// `>`, `>>` or `<`: the next word is the redirection's target.
    fn redirection(&mut self, chars: &mut Chars<'_>) {
        // `2>`: the descriptor number is part of the redirection.
        if self.word.chars().all(|d| d.is_ascii_digit()) {
            self.word.clear();
            self.in_word = false;
        }
        self.flush();
        while chars.peek() == Some(&'>') {
            chars.next();
        }
        self.redirect = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(e: &Example) -> Vec<&str> {
        e.words.iter().map(String::as_str).collect()
    }

    #[test]
    fn shell_is_cut_and_quotes_kept() {
        let md = "text\n```\n$ sudo rtlab measure --cpus '!0' --break 150us > out.txt; echo $?\nrtlab: error: output\n$ trace-cmd report > r.txt; rtlab explain r.txt\n$ cargo run --release -- run\n```\n```\nrtlab man -o /tmp\n```\n";
        let ex = from_markdown(md, "README.md");
        assert_eq!(ex.len(), 4, "{ex:?}");
        assert!(ex[0].shows_error() && !ex[1].shows_error());
        assert_eq!(words(&ex[3]), ["rtlab", "man", "-o", "/tmp"]);
        assert_eq!(
            words(&ex[0]),
            ["rtlab", "measure", "--cpus", "!0", "--break", "150us"]
        );
        assert_eq!(ex[0].source, "README.md:3");
        assert_eq!(words(&ex[1]), ["rtlab", "explain", "r.txt"]);
        assert_eq!(words(&ex[2]), ["rtlab", "run"]);
    }

    #[test]
    fn help_examples_lose_their_comments_and_equivalents_their_other_tool() {
        let help = "EXAMPLES:\n    rtlab measure                              every CPU\n    rtlab load 'cmd:\"stress-ng --vm 2\"' --duration 10m -o load.json\n    rtlab tune irqd --unit \\\n        | sudo tee /etc/x\n\nCYCLICTEST EQUIVALENTS:\n    cyclictest -b 150 --tracemark            rtlab measure --break 150us\n\nEXIT STATUS:\n    0    rtlab measure is not an example\n";
        let ex = from_help(help, "rtlab measure --help");
        let all: Vec<Vec<&str>> = ex.iter().map(words).collect();
        assert_eq!(
            all,
            vec![
                vec!["rtlab", "measure"],
                vec![
                    "rtlab",
                    "load",
                    "cmd:\"stress-ng --vm 2\"",
                    "--duration",
                    "10m",
                    "-o",
                    "load.json"
                ],
                vec!["rtlab", "tune", "irqd", "--unit"],
                vec!["rtlab", "measure", "--break", "150us"],
            ]
        );
    }
}
