//! The terminal: where messages go, whether colour is used, and the live view that redraws
//! itself on standard error about once a second.
//!
//! Colour and the live view appear only on a terminal; colour also respects `NO_COLOR`
//! (<https://no-color.org>). Standard output carries only the final result, so it can be piped.
//!
//! A message is one line: on a terminal it is wrapped at the terminal's width (at most
//! [`MAX_WIDTH`] columns) with its continuation indented, so a long fix stays readable; to a
//! file or a pipe it stays one line, for `grep` and for scripts that count lines.

use std::io::{IsTerminal, Write};

/// The widest a wrapped message gets, however wide the terminal: lines longer than this are
/// hard to read.
pub const MAX_WIDTH: usize = 100;

/// The indent of a wrapped message's continuation lines: under the text after `rtlab: `.
const INDENT: &str = "       ";

/// How messages and the live view reach the person.
pub struct Console {
    quiet: bool,
    live: bool,
    colour: bool,
    drawn_lines: usize,
}

impl Console {
    /// A console for one command. `quiet` silences everything but errors.
    pub fn new(quiet: bool) -> Console {
        let tty = std::io::stderr().is_terminal();
        let no_colour = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Console {
            quiet,
            live: tty && !quiet,
            colour: tty && !no_colour,
            drawn_lines: 0,
        }
    }

    /// Whether the live view is shown.
    pub fn live(&self) -> bool {
        self.live
    }

    /// A warning line on standard error (unless quiet).
    pub fn warn(&mut self, message: &str) {
        if self.quiet {
            return;
        }
        self.clear_live();
        let label = if self.colour {
            "\x1b[33mwarning\x1b[0m"
        } else {
            "warning"
        };
        say(&format!("rtlab: {label}: {message}"));
    }

    /// A note on standard error (unless quiet).
    pub fn note(&mut self, message: &str) {
        if self.quiet {
            return;
        }
        self.clear_live();
        say(&format!("rtlab: {message}"));
    }

    /// A line explaining a verdict or a deliberate change (printed even when quiet: it says
    /// why the exit status is what it is).
    pub fn verdict(&mut self, message: &str) {
        self.clear_live();
        say(&format!("rtlab: {message}"));
    }

    /// Replaces the live view with `lines`.
    pub fn draw_live(&mut self, lines: &[String]) {
        if !self.live {
            return;
        }
        let mut out = String::new();
        if self.drawn_lines > 0 {
            // Back to the first line of the previous frame, and clear to the end of screen.
            out.push_str(&format!("\x1b[{}F\x1b[J", self.drawn_lines));
        }
        for line in lines {
            out.push_str(line);
            out.push('\n');
        }
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(out.as_bytes());
        let _ = err.flush();
        self.drawn_lines = lines.len();
    }

    /// Erases the live view, leaving the cursor where it began.
    pub fn clear_live(&mut self) {
        if self.live && self.drawn_lines > 0 {
            let _ = write!(std::io::stderr(), "\x1b[{}F\x1b[J", self.drawn_lines);
            self.drawn_lines = 0;
        }
    }
}

/// Prints an error line the way every rtlab error is printed.
pub fn error(message: &str) {
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let label = if colour {
        "\x1b[31merror\x1b[0m"
    } else {
        "error"
    };
    say(&format!("rtlab: {label}: {message}"));
}

/// Prints a warning line outside a run's console (a renamed option, say); `--quiet` does not
/// hide it, as it is about the command line, not the run.
pub fn warning(message: &str) {
    say(&format!("rtlab: warning: {message}"));
}

/// Writes one message to standard error: wrapped to the terminal there is one, else as one
/// line.
fn say(line: &str) {
    let stderr = std::io::stderr();
    let width = if stderr.is_terminal() {
        terminal_size::terminal_size_of(&stderr).map(|(w, _)| usize::from(w.0))
    } else {
        None
    };
    let text = match width {
        Some(w) => wrap(line, w.min(MAX_WIDTH)),
        None => line.to_string(),
    };
    let _ = writeln!(stderr.lock(), "{text}");
}

/// `line` broken at spaces into lines of at most `width` visible columns (colour codes take
/// none), continuation lines indented by [`INDENT`]; a word longer than a line keeps a line of
/// its own, unbroken (a path or a command is copied whole).
pub fn wrap(line: &str, width: usize) -> String {
    let width = width.max(INDENT.len() + 20);
    let mut out = String::new();
    let mut used = 0;
    for word in line.split(' ') {
        let len = visible_len(word);
        if used > 0 && used + 1 + len > width {
            out.push('\n');
            out.push_str(INDENT);
            used = INDENT.len();
        } else if used > 0 {
            out.push(' ');
            used += 1;
        }
        out.push_str(word);
        used += len;
    }
    out
}

/// Columns `text` takes on a terminal: its characters less ANSI colour sequences.
fn visible_len(text: &str) -> usize {
    let mut n = 0;
    let mut in_escape = false;
    for c in text.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

/// Writes `text` to standard output; a closed pipe (`| head`) is not an error.
pub fn print_stdout(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_message_wraps_at_spaces_with_its_continuation_indented() {
        let line = "rtlab: error: the run store cannot be used: no place for the run store: HOME \
                    is not set; give --db PATH or set RTLAB_DB";
        let text = wrap(line, 60);
        for l in text.lines() {
            assert!(l.chars().count() <= 60, "{l:?}");
        }
        assert!(
            text.lines().skip(1).all(|l| l.starts_with(INDENT)),
            "{text}"
        );
        // Nothing is lost or added but the breaks.
        let rejoined: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(rejoined, line.split_whitespace().collect::<Vec<_>>());
    }

    #[test]
    fn a_short_message_and_a_long_word_stay_whole() {
        assert_eq!(wrap("rtlab: note: done", 80), "rtlab: note: done");
        let path = format!("/{}", "x".repeat(120));
        let text = wrap(&format!("rtlab: error: {path}: not found"), 80);
        assert!(
            text.lines().any(|l| l.trim() == format!("{path}:")),
            "{text}"
        );
    }

    #[test]
    fn colour_takes_no_columns() {
        assert_eq!(visible_len("\x1b[31merror\x1b[0m"), 5);
    }
}
