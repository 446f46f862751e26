//! `io[:SIZE][:WORKERS]`: storage writes that reach the disk. Each worker writes a file of
//! its own in the load's private directory, 64 KiB at a time, and calls `fsync` after every
//! MiB, so the block layer, the filesystem journal and the disk's interrupts all work; when the
//! file reaches SIZE it is truncated and written again, so no worker ever holds more than SIZE
//! on disk. The files are removed when the load stops (and with the private directory, by the
//! guardian, if rtlab is killed).
//!
//! What is achieved: fsyncs (the operations) and bytes written. On a RAM filesystem (a tmpfs
//! `--load-dir`) nothing reaches a disk; the load still runs and says so in a note.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use model::CpuSet;
use model::load::spec::{format_bytes, format_size};

use crate::worker::{DEFAULT_STACK, Rng, Workers};
use crate::{Counters, Generator, LoadError, StartContext};

/// Bytes per write.
const BLOCK: usize = 64 * 1024;
/// Bytes written between two fsyncs.
const SYNC_EVERY: u64 = 1 << 20;
/// Free space left untouched on the filesystem beyond what the workers may use.
const SPACE_MARGIN: u64 = 64 << 20;

/// Writes and fsyncs under a size cap.
#[derive(Debug)]
pub struct IoLoad {
    item: String,
    bytes: u64,
    workers_wanted: u32,
    cpus: CpuSet,
    files: Vec<PathBuf>,
    in_memory: bool,
    /// The first write error a worker met (it then stopped).
    failure: Arc<Mutex<Option<String>>>,
    workers: Workers,
}

impl IoLoad {
    /// `workers` writers with at most `bytes` on disk each.
    pub fn new(item: String, bytes: u64, workers: u32) -> IoLoad {
        IoLoad {
            workers: Workers::new(&item),
            item,
            bytes,
            workers_wanted: workers,
            cpus: CpuSet::new(),
            files: Vec::new(),
            in_memory: false,
            failure: Arc::default(),
        }
    }
}

impl Generator for IoLoad {
    fn start(&mut self, ctx: &StartContext<'_>) -> Result<(), LoadError> {
        self.cpus = ctx.cpus.clone();
        let fs =
            files::filesystem(ctx.workdir).map_err(|e| LoadError::sys(&self.item, e.into()))?;
        self.in_memory = fs.in_memory;
        let needed = self.bytes * u64::from(self.workers_wanted);
        if needed + SPACE_MARGIN > fs.available_bytes {
            return Err(LoadError::setup(
                &self.item,
                format!(
                    "needs {} free in {} and {} is available; choose another --load-dir or a \
                     smaller SIZE",
                    format_bytes((needed + SPACE_MARGIN) as f64),
                    ctx.workdir.display(),
                    format_bytes(fs.available_bytes as f64)
                ),
            ));
        }
        for w in 0..self.workers_wanted {
            let path = ctx
                .workdir
                .join(format!("io-{:08x}-{w}.dat", ctx.seed & 0xffff_ffff));
            let file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| LoadError::setup(&self.item, format!("{}: {e}", path.display())))?;
            self.files.push(path.clone());
            let cap = self.bytes;
            let failure = Arc::clone(&self.failure);
            let mut rng = Rng::new(ctx.seed.wrapping_add(u64::from(w)));
            self.workers.spawn(
                &format!("rtlab-io{w}"),
                ctx.cpus,
                DEFAULT_STACK,
                move |shared, meter| {
                    let mut block = vec![0u8; BLOCK];
                    for b in block.chunks_exact_mut(8) {
                        b.copy_from_slice(&rng.next_u64().to_le_bytes());
                    }
                    let mut writer = Writer {
                        file,
                        cap,
                        written: 0,
                        unsynced: 0,
                    };
                    while !shared.stopping() {
                        // Vary the block so no layer can recognise a repeat.
                        block[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
                        match writer.step(&block) {
                            Ok(synced) => meter.count(u64::from(synced), BLOCK as u64),
                            Err(e) => {
                                let mut first = failure.lock().unwrap_or_else(|e| e.into_inner());
                                first.get_or_insert_with(|| format!("{}: {e}", path.display()));
                                break;
                            }
                        }
                        meter.tick(shared);
                    }
                },
            )?;
        }
        self.workers.go();
        Ok(())
    }

    fn achieved(&self) -> Counters {
        self.workers.counters()
    }

    fn describe(&self) -> String {
        format!(
            "{} writer{}, 64 KiB writes and an fsync every MiB, at most {} on disk each, on \
             {}",
            self.workers_wanted,
            if self.workers_wanted == 1 { "" } else { "s" },
            format_size(self.bytes),
            self.cpus.with_noun()
        )
    }

    fn unit(&self) -> &'static str {
        "fsync"
    }

    fn tasks(&self) -> u32 {
        self.workers.len() as u32
    }

    fn stop(&mut self) -> Counters {
        let counters = self.workers.stop();
        for path in self.files.drain(..) {
            let _ = std::fs::remove_file(path);
        }
        counters
    }

    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.in_memory {
            notes.push(
                "the load directory is on a RAM filesystem (tmpfs): writes and fsyncs never \
                 reached a disk; give --load-dir a directory on a disk"
                    .to_string(),
            );
        }
        if let Some(e) = self
            .failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            notes.push(format!("a writer stopped at an error: {e}"));
        }
        notes
    }
}

/// One worker's file: writes blocks, fsyncs every [`SYNC_EVERY`], wraps at the cap.
struct Writer {
    file: File,
    cap: u64,
    written: u64,
    unsynced: u64,
}

impl Writer {
    /// Writes one block; returns whether it also synced.
    fn step(&mut self, block: &[u8]) -> std::io::Result<bool> {
        if self.written + block.len() as u64 > self.cap {
            self.file.set_len(0)?;
            self.file.seek(SeekFrom::Start(0))?;
            self.written = 0;
        }
        self.file.write_all(block)?;
        self.written += block.len() as u64;
        self.unsynced += block.len() as u64;
        if self.unsynced >= SYNC_EVERY {
            self.file.sync_all()?;
            self.unsynced = 0;
            return Ok(true);
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_never_exceeds_its_cap_and_syncs_every_mib() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut w = Writer {
            file: File::create(&path).unwrap(),
            cap: 2 << 20,
            written: 0,
            unsynced: 0,
        };
        let block = vec![7u8; BLOCK];
        let mut syncs = 0;
        for _ in 0..100 {
            syncs += u32::from(w.step(&block).unwrap());
            assert!(std::fs::metadata(&path).unwrap().len() <= 2 << 20);
        }
        assert_eq!(syncs, 100 * BLOCK as u32 / (1 << 20));
    }
}
