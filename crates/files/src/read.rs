//! Files a person names, read whole but bounded: [`read_input`], [`read_input_text`], and
//! I/O errors in the words people read ([`plain_io`]).

use std::fs::File;
use std::io;
use std::path::Path;

/// Reads a file a person named (a result, an import, a kernel config or log) whole, but at
/// most `limit` bytes: a directory, or more than `limit` bytes, is refused with one line
/// that says so (without the path, which the caller names with its flag). Pipes and
/// process substitutions (`--dmesg <(dmesg)`) are read like files.
pub fn read_input(path: &Path, limit: u64) -> std::result::Result<Vec<u8>, String> {
    use std::io::Read as _;
    let file = File::open(path).map_err(|e| plain_io(&e))?;
    let meta = file.metadata().map_err(|e| plain_io(&e))?;
    if meta.is_dir() {
        return Err("it is a directory; name a file".to_string());
    }
    if meta.is_file() && meta.len() > limit {
        return Err(model_too_large(meta.len(), limit));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| plain_io(&e))?;
    if bytes.len() as u64 > limit {
        return Err(model_too_large(bytes.len() as u64, limit));
    }
    Ok(bytes)
}

/// [`read_input`] for a text file: bytes that are not UTF-8 are refused too.
pub fn read_input_text(path: &Path, limit: u64) -> std::result::Result<String, String> {
    String::from_utf8(read_input(path, limit)?)
        .map_err(|_| "not a text file: it is not UTF-8".to_string())
}

/// An I/O error as people read it: "no such file", "permission denied", else the system's
/// words without "(os error N)".
pub fn plain_io(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => return "no such file".to_string(),
        io::ErrorKind::PermissionDenied => return "permission denied".to_string(),
        _ => {}
    }
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn model_too_large(size: u64, limit: u64) -> String {
    format!(
        "it holds more than {} MiB, more than rtlab reads of such a file{}; is it the right file?",
        limit >> 20,
        if size > limit {
            String::new()
        } else {
            format!(" ({size} bytes)")
        }
    )
}
