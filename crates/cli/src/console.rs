//! The terminal: where messages go, whether colour is used, and the live view that redraws
//! itself on standard error about once a second.
//!
//! Colour and the live view appear only on a terminal; colour also respects `NO_COLOR`
//! (<https://no-color.org>). Standard output carries only the final result, so it can be piped.

use std::io::{IsTerminal, Write};

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
        let _ = writeln!(std::io::stderr(), "rtlab: {label}: {message}");
    }

    /// A note on standard error (unless quiet).
    pub fn note(&mut self, message: &str) {
        if self.quiet {
            return;
        }
        self.clear_live();
        let _ = writeln!(std::io::stderr(), "rtlab: {message}");
    }

    /// A line explaining a verdict or a deliberate change (printed even when quiet: it says
    /// why the exit status is what it is).
    pub fn verdict(&mut self, message: &str) {
        self.clear_live();
        let _ = writeln!(std::io::stderr(), "rtlab: {message}");
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
    let _ = writeln!(std::io::stderr(), "rtlab: {label}: {message}");
}

/// Prints a warning line outside a run's console (a renamed option, say); `--quiet` does not
/// hide it, as it is about the command line, not the run.
pub fn warning(message: &str) {
    let _ = writeln!(std::io::stderr(), "rtlab: warning: {message}");
}

/// Writes `text` to standard output; a closed pipe (`| head`) is not an error.
pub fn print_stdout(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
