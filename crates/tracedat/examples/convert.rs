//! Rewrites a trace.dat: `convert IN OUT VERSION [none|zlib|zstd] [nosyms|syms-from=TEXT]` —
//! version 6 or 7, the compression, and (with `nosyms`) without the kallsyms (a small fixture
//! of a recording whose explanation needs no symbols), or (with `syms-from=TEXT`) with only the
//! symbols whose names are words of TEXT, the recording's `trace-cmd report` (and `_stext`): every
//! address the report names still resolves to the same symbol, as the ones dropped lay between
//! a named function's start and the next function.

use std::fs::File;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output, version, rest @ ..] = &args[..] else {
        return Err("usage: convert IN OUT 6|7 [none|zlib|zstd] [nosyms|syms-from=TEXT]".into());
    };
    let dat = tracedat::TraceDat::open(File::open(input)?)?;
    let mut contents = tracedat::Contents::from_dat(&dat, 1 << 32)?;
    if rest.iter().any(|a| a == "nosyms") {
        contents.kallsyms.clear();
    }
    if let Some(text) = rest.iter().find_map(|a| a.strip_prefix("syms-from=")) {
        let text = std::fs::read_to_string(text)?;
        let words: std::collections::HashSet<&str> = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .collect();
        let kept: String = String::from_utf8_lossy(&contents.kallsyms)
            .lines()
            .filter(|l| {
                l.split_whitespace()
                    .nth(2)
                    .is_some_and(|name| name == "_stext" || words.contains(name))
            })
            .map(|l| format!("{l}\n"))
            .collect();
        contents.kallsyms = kept.into_bytes();
    }
    let out = File::create(output)?;
    let compression = rest
        .first()
        .and_then(|c| tracedat::Compression::from_name(c))
        .unwrap_or(tracedat::Compression::None);
    let n = match version.as_str() {
        "6" => tracedat::write_v6(&contents, out)?,
        _ => tracedat::write_v7(&contents, compression, out)?,
    };
    eprintln!("{n} bytes");
    Ok(())
}
