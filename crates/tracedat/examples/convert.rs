//! Rewrites a trace.dat: `convert IN OUT VERSION [none|zlib|zstd] [nosyms]` — version 6 or 7,
//! the compression, and (with `nosyms`) without the kallsyms (a small fixture of a recording
//! whose explanation needs no symbols).

use std::fs::File;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output, version, rest @ ..] = &args[..] else {
        return Err("usage: convert IN OUT 6|7 [none|zlib|zstd] [nosyms]".into());
    };
    let dat = tracedat::TraceDat::open(File::open(input)?)?;
    let mut contents = tracedat::Contents::from_dat(&dat, 1 << 32)?;
    if rest.iter().any(|a| a == "nosyms") {
        contents.kallsyms.clear();
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
