//! `/proc/cmdline`: the boot parameters, in order, split the way the kernel splits them
//! (`next_arg()` and `parse_args()` in kernel/params.c):
//!
//! - parameters are separated by whitespace, except inside double quotes (`foo="a b"`);
//! - a parameter is `key` or `key=value`, split at the first `=`; quotes around the value (or
//!   around the whole parameter) are dropped;
//! - a bare `--` ends the kernel's parameters: what follows goes to init.
//!
//! Keys compare with `-` and `_` as the same character, as the kernel's `parameq()` does.
//! This module only splits; what a parameter means (`isolcpus=`, `preempt=`) is decided by
//! its readers.

/// One boot parameter: `key` or `key=value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param<'a> {
    /// The name, as written.
    pub key: &'a str,
    /// The value after the first `=`, without surrounding quotes; `None` for a bare flag.
    pub value: Option<&'a str>,
}

/// A parsed command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cmdline<'a> {
    /// The kernel's parameters, in order, repeats kept.
    pub params: Vec<Param<'a>>,
    /// What follows a bare `--` (arguments for init), trimmed; `None` when there is no `--`.
    pub init_args: Option<&'a str>,
}

impl<'a> Cmdline<'a> {
    /// The last parameter named `key` (the kernel applies most parameters in order, so the
    /// last one wins).
    pub fn get(&self, key: &str) -> Option<&Param<'a>> {
        self.params.iter().rev().find(|p| key_eq(p.key, key))
    }

    /// The value of the last parameter named `key`; `None` when absent or given without `=`.
    pub fn value(&self, key: &str) -> Option<&'a str> {
        self.get(key).and_then(|p| p.value)
    }

    /// Whether a parameter named `key` is present (with or without a value).
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Every parameter named `key`, in order (for parameters that accumulate, such as
    /// `console=`).
    pub fn all<'s>(&'s self, key: &'s str) -> impl Iterator<Item = &'s Param<'a>> + 's {
        self.params.iter().filter(move |p| key_eq(p.key, key))
    }
}

/// Whether two parameter names are the same to the kernel (`-` and `_` are interchangeable).
pub fn key_eq(a: &str, b: &str) -> bool {
    let norm = |c: u8| if c == b'-' { b'_' } else { c };
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| norm(x) == norm(y))
}

/// Splits a command line into parameters. Never fails: an unterminated quote runs to the end
/// of the text, as it does in the kernel.
pub fn parse(text: &str) -> Cmdline<'_> {
    let bytes = text.as_bytes();
    let mut params = Vec::new();
    let mut pos = skip_spaces(bytes, 0);
    while pos < bytes.len() {
        let (param, next) = next_arg(text, pos);
        if param.key == "--" && param.value.is_none() {
            let rest = text[next..].trim();
            return Cmdline {
                params,
                init_args: Some(rest),
            };
        }
        params.push(param);
        pos = skip_spaces(bytes, next);
    }
    Cmdline {
        params,
        init_args: None,
    }
}

fn skip_spaces(bytes: &[u8], mut pos: usize) -> usize {
    while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
        pos += 1;
    }
    pos
}

/// One parameter starting at `start` (not whitespace); returns it and the index just past it.
/// All the indices below sit at ASCII bytes, so slicing never splits a UTF-8 character.
fn next_arg(text: &str, start: usize) -> (Param<'_>, usize) {
    let bytes = text.as_bytes();
    let mut begin = start;
    let mut in_quote = false;
    let quoted = bytes[begin] == b'"';
    if quoted {
        begin += 1;
        in_quote = true;
    }
    let mut equals = None;
    let mut end = begin;
    while end < bytes.len() {
        let c = bytes[end];
        if c.is_ascii_whitespace() && !in_quote {
            break;
        }
        // The kernel ignores an `=` in the first position (an empty key).
        if equals.is_none() && c == b'=' && end > begin {
            equals = Some(end);
        }
        if c == b'"' {
            in_quote = !in_quote;
        }
        end += 1;
    }
    let next = end;
    // A closing quote at the end is dropped when the value or the whole parameter was quoted.
    let strip_end = |from: usize| {
        if end > from && bytes[end - 1] == b'"' {
            end - 1
        } else {
            end
        }
    };
    let param = match equals {
        None => {
            let stop = if quoted { strip_end(begin) } else { end };
            Param {
                key: &text[begin..stop],
                value: None,
            }
        }
        Some(eq) => {
            let mut vstart = eq + 1;
            let value_quoted = vstart < end && bytes[vstart] == b'"';
            if value_quoted {
                vstart += 1;
            }
            let vend = if quoted || value_quoted {
                strip_end(vstart)
            } else {
                end
            };
            Param {
                key: &text[begin..eq],
                value: Some(&text[vstart..vend.max(vstart)]),
            }
        }
    };
    (param, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv<'a>(key: &'a str, value: Option<&'a str>) -> Param<'a> {
        Param { key, value }
    }

    #[test]
    fn ubuntu_desktop_cmdline() {
        // the shared corpus, corpus/proc/procfs_cmdline_ubuntu.txt (prometheus/procfs fixture).
        let text = "BOOT_IMAGE=/vmlinuz-5.11.0-22-generic root=UUID=456a0345-450d-4f7b-b7c9-43e3241d99ad ro quiet splash vt.handoff=7\n";
        let c = parse(text);
        assert_eq!(c.params.len(), 6);
        assert_eq!(
            c.params[0],
            kv("BOOT_IMAGE", Some("/vmlinuz-5.11.0-22-generic"))
        );
        // Only the first `=` splits.
        assert_eq!(
            c.value("root"),
            Some("UUID=456a0345-450d-4f7b-b7c9-43e3241d99ad")
        );
        assert!(c.has("quiet") && c.has("splash") && c.has("ro"));
        assert_eq!(c.value("quiet"), None);
        assert_eq!(c.value("vt.handoff"), Some("7"));
        assert_eq!(c.init_args, None);
        assert!(!c.has("isolcpus"));
    }

    #[test]
    fn firecracker_cmdline_stops_at_dashes() {
        // This VM's /proc/cmdline (shortened): init's arguments follow `--`.
        let text = "console=ttyS0 quiet reboot=k panic=1 rdinit=/process_api -- --firecracker-init --addr 0.0.0.0:2024\n";
        let c = parse(text);
        let keys: Vec<&str> = c.params.iter().map(|p| p.key).collect();
        assert_eq!(keys, ["console", "quiet", "reboot", "panic", "rdinit"]);
        assert_eq!(c.init_args, Some("--firecracker-init --addr 0.0.0.0:2024"));
        assert!(!c.has("--addr"));
        assert_eq!(parse("quiet --").init_args, Some(""));
    }

    #[test]
    fn quotes_repeats_and_dashes() {
        let c =
            parse(r#"isolcpus=1 dyndbg="file sched.c +p" isolcpus=2-3 "foo=a b" rcu-nocbs=2 x="#);
        assert_eq!(c.value("dyndbg"), Some("file sched.c +p"));
        assert_eq!(c.value("isolcpus"), Some("2-3"), "last one wins");
        assert_eq!(c.all("isolcpus").count(), 2);
        assert_eq!(c.value("foo"), Some("a b"));
        assert_eq!(c.value("rcu_nocbs"), Some("2"), "- and _ are the same");
        assert_eq!(c.get("x"), Some(&kv("x", Some(""))));
        assert!(key_eq("nohz-full", "nohz_full") && !key_eq("nohz", "nohz_full"));
    }

    #[test]
    fn malformed_input_does_not_panic() {
        assert_eq!(parse(""), Cmdline::default());
        assert_eq!(parse("   \n\t").params, []);
        // Unterminated quote runs to the end.
        let c = parse(r#"a="b c d"#);
        assert_eq!(c.params, [kv("a", Some("b c d"))]);
        let c = parse(r#"" "" ="= =x == "#);
        assert!(
            c.params
                .iter()
                .all(|p| !p.key.is_empty() || p.value.is_none())
        );
        assert_eq!(parse("=x").params, [kv("=x", None)]);
        assert_eq!(parse(r#"""#).params, [kv("", None)]);
        assert_eq!(parse(r#"k=""#).params, [kv("k", Some(""))]);
        assert_eq!(parse("ünïcode=ö ok").value("ünïcode"), Some("ö"));
    }
}
