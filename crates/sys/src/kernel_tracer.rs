//! A tracer of the osnoise family (`osnoise`, `timerlat`) run the way rtla runs it: this
//! module owns saving the global options under `osnoise/` (and `tracing_thresh`) that a run
//! changes, starting the tracer in a private instance where the kernel allows it (5.17 and
//! later) or else in the top-level buffer when no other tracer holds it, with the chosen
//! events on, and giving everything back: the instance removed or the top-level buffer's
//! tracer and switch as found, then every saved option. `osnoise` and `timerlat` wrap it and
//! restore from their `Drop`.

use std::path::{Path, PathBuf};

use crate::trace_instance::Instance;
use crate::tracefs::Tracefs;
use crate::{Error, Result};

/// A tracefs file's text, trimmed of whitespace and NULs.
pub(crate) fn read(path: &Path) -> Result<String> {
    std::fs::File::open(path)
        .and_then(|mut f| crate::root::read_text(&mut f))
        .map(|t| {
            t.trim_matches(|c: char| c.is_whitespace() || c == '\0')
                .to_string()
        })
        .map_err(|e| Error::from_io(path, e))
}

/// Writes a tracefs file, which must exist (tracefs makes every control file; one that is
/// missing means the kernel lacks the feature, never a file to create).
///
/// `osnoise/cpus` gets a NUL after the list: some kernels copy the bytes written into a
/// buffer they do not terminate and parse the list up to a NUL (a newline does not end it), so
/// the NUL inside the count keeps whatever follows on the kernel's stack out of the list.
/// (Reading that file back needs a buffer larger than its text: `root::read_text`.)
pub(crate) fn write(path: &Path, value: &str) -> Result<()> {
    use std::io::Write;
    let mut bytes = value.as_bytes().to_vec();
    if path.ends_with("osnoise/cpus") {
        bytes.push(0);
    }
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .and_then(|mut f| f.write_all(&bytes))
        .map_err(|e| Error::from_io(path, e))
}

/// The tracer's buffer and the options as found.
#[derive(Debug)]
pub(crate) struct KernelTracer {
    top: PathBuf,
    /// Where it runs: a private instance, or `None` for the top-level buffer.
    instance: Option<Instance>,
    /// The options as found (path relative to the top, value).
    saved: Vec<(&'static str, String)>,
    /// For the top-level buffer: `current_tracer` and `tracing_on` as found.
    saved_top: Option<(String, String)>,
    /// For the top-level buffer: the events' `enable` files this run switched on (an
    /// instance's go with it).
    enabled_top: Vec<PathBuf>,
    restored: bool,
}

impl KernelTracer {
    /// Saves those of `options` the kernel has; nothing is changed yet.
    pub(crate) fn save(fs: &Tracefs, options: &[&'static str]) -> Result<KernelTracer> {
        let top = fs.dir().to_path_buf();
        let mut saved = Vec::new();
        for &name in options {
            let path = top.join(name);
            if path.exists() {
                saved.push((name, selected(read(&path)?)));
            }
        }
        Ok(KernelTracer {
            top,
            instance: None,
            saved,
            saved_top: None,
            enabled_top: Vec::new(),
            restored: false,
        })
    }

    /// The top-level tracefs directory.
    pub(crate) fn top(&self) -> &Path {
        &self.top
    }

    /// An option's value as found, if the kernel has it.
    pub(crate) fn saved(&self, name: &str) -> Option<&str> {
        self.saved
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Starts `tracer` with `events` on (those the kernel has): in a private instance where
    /// the kernel lets it run there, else in the top-level buffer when its tracer is `nop`
    /// (refused otherwise: rtlab does not take a buffer from someone else).
    ///
    /// The events and the buffer's switch are set before the tracer: the tracer measures as
    /// soon as it is written, and may stop the buffer at once at its threshold (a stop that
    /// switching the buffer on afterwards would undo).
    pub(crate) fn start(&mut self, tracer: &str, events: &[&str]) -> Result<()> {
        self.start_with(tracer, events, &[])
    }

    /// [`KernelTracer::start`], with `buffer` (a file of the buffer and its value, such as
    /// `tracing_cpumask`) written into the buffer the tracer runs in before it starts: an
    /// instance's go with it; for the top-level buffer the caller saved them as options.
    pub(crate) fn start_with(
        &mut self,
        tracer: &str,
        events: &[&str],
        buffer: &[(&str, &str)],
    ) -> Result<()> {
        let fs = Tracefs::at(&self.top);
        if let Ok(instance) = Instance::create(&fs) {
            enable_events(instance.dir(), events);
            let set = |dir: &Path| buffer.iter().try_for_each(|(f, v)| write(&dir.join(f), v));
            if set(instance.dir()).is_ok()
                && instance.set_on(true).is_ok()
                && write(&instance.dir().join("current_tracer"), tracer).is_ok()
            {
                self.instance = Some(instance);
                return Ok(());
            }
            let _ = instance.remove();
        }
        let path = self.top.join("current_tracer");
        let current = read(&path)?;
        if current != "nop" {
            return Err(Error::Parse {
                path,
                line: 1,
                what: format!(
                    "nop (this kernel runs {tracer} only in the top-level buffer, and the '{current}' tracer is in use there; rtlab does not take it from someone else)"
                ),
            });
        }
        let on = read(&self.top.join("tracing_on"))?;
        self.saved_top = Some((current, on));
        for (file, value) in buffer {
            write(&self.top.join(file), value)?;
        }
        self.enabled_top = enable_events(&self.top, events);
        write(&self.top.join("tracing_on"), "1")?;
        write(&path, tracer)
    }

    /// Where the trace is read from.
    pub(crate) fn dir(&self) -> &Path {
        self.instance.as_ref().map_or(&self.top, |i| i.dir())
    }

    /// Whether it runs in a private instance (else in the top-level buffer).
    pub(crate) fn in_instance(&self) -> bool {
        self.instance.is_some()
    }

    /// Stops the tracer (its buffer stays readable).
    pub(crate) fn stop(&self) -> Result<()> {
        write(&self.dir().join("tracing_on"), "0")
    }

    /// Removes the instance or gives the top-level buffer back, then restores the saved
    /// options: those named in `first` in that order, then the others as saved. Once only;
    /// the first error is returned after every step was tried.
    pub(crate) fn restore(&mut self, first: &[&'static str]) -> Result<()> {
        if self.restored {
            return Ok(());
        }
        self.restored = true;
        let mut result = Ok(());
        let mut keep = |r: Result<()>| {
            if result.is_ok() {
                result = r;
            }
        };
        if let Some(instance) = self.instance.take() {
            keep(write(&instance.dir().join("current_tracer"), "nop"));
            keep(instance.remove());
        }
        if let Some((tracer, on)) = self.saved_top.take() {
            keep(write(&self.top.join("tracing_on"), "0"));
            keep(write(&self.top.join("current_tracer"), &tracer));
            keep(write(&self.top.join("tracing_on"), &on));
        }
        for enable in std::mem::take(&mut self.enabled_top) {
            keep(write(&enable, "0"));
        }
        let saved = std::mem::take(&mut self.saved);
        let rest = saved.iter().map(|(n, _)| *n).filter(|n| !first.contains(n));
        for name in first.iter().copied().chain(rest) {
            if let Some((_, v)) = saved.iter().find(|(n, _)| *n == name) {
                keep(write(&self.top.join(name), v));
            }
        }
        result
    }
}

/// The value to write back for what a file read: a choice file (`none [round-robin] per-cpu`)
/// takes the bracketed choice; any other value as read.
fn selected(value: String) -> String {
    match (value.find('['), value.find(']')) {
        (Some(open), Some(close)) if open < close && value.matches('[').count() == 1 => {
            value[open + 1..close].to_string()
        }
        _ => value,
    }
}

/// Enables each of `events` (`group/event`, or a whole `group`) the kernel has (a tracer
/// still measures without them); returns the `enable` files it switched on.
fn enable_events(dir: &Path, events: &[&str]) -> Vec<PathBuf> {
    let mut switched = Vec::new();
    for event in events {
        let path = dir.join("events").join(event).join("enable");
        let was_on = read(&path).is_ok_and(|v| v == "1");
        if path.exists() && !was_on && write(&path, "1").is_ok() {
            switched.push(path);
        }
    }
    switched
}

#[cfg(test)]
mod tests {
    use super::selected;

    #[test]
    fn a_choice_file_is_saved_as_its_choice() {
        assert_eq!(selected("none [round-robin] per-cpu".into()), "round-robin");
        assert_eq!(selected("[none] round-robin per-cpu".into()), "none");
        assert_eq!(selected("500000".into()), "500000");
        assert_eq!(selected("ff".into()), "ff");
    }
}
