//! `messaging:GxF[:socket|pipe][:thread|process]`: hackbench's load, kept running. G groups,
//! each of F senders and F receivers; every receiver has one channel (a UNIX stream socket
//! pair, or a pipe), and every sender of its group writes 100-byte messages to each receiver
//! in turn, as fast as the receivers take them. The scheduler does the rest: thousands of
//! wake-ups and context switches a second, tasks migrating between CPUs, socket buffers
//! allocated and freed.
//!
//! Threads (the default) share rtlab's load process; processes are forked workers
//! ([`Children`]) that count into shared memory. Threads stop at the stop flag (senders) or at
//! end of file once every sender is gone (receivers); processes are killed. What is achieved
//! is messages (and bytes) received.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use model::CpuSet;
use model::load::spec::{TaskKind, Transport};
use sys::mem::SharedCounters;

use crate::children::Children;
use crate::worker::Workers;
use crate::{Counters, Generator, LoadError, StartContext};

/// Bytes per message (hackbench's DATASIZE).
const MESSAGE: usize = 100;
/// Stack of a messaging thread: a loop and a 100-byte buffer.
const STACK: usize = 64 * 1024;

/// hackbench-like groups of senders and receivers.
#[derive(Debug)]
pub struct Messaging {
    item: String,
    groups: u32,
    fds: u32,
    transport: Transport,
    tasks: TaskKind,
    cpus: CpuSet,
    threads: Workers,
    children: Children,
    /// Bytes received, one slot per receiver process.
    received: Option<Arc<SharedCounters>>,
    stopped: Option<Counters>,
}

impl Messaging {
    /// `groups` groups of `fds` senders and `fds` receivers.
    pub fn new(
        item: String,
        groups: u32,
        fds: u32,
        transport: Transport,
        tasks: TaskKind,
    ) -> Messaging {
        Messaging {
            threads: Workers::new(&item),
            children: Children::new(&item),
            item,
            groups,
            fds,
            transport,
            tasks,
            cpus: CpuSet::new(),
            received: None,
            stopped: None,
        }
    }

    fn channel(&self) -> Result<(File, File), LoadError> {
        let (read, write): (OwnedFd, OwnedFd) = match self.transport {
            Transport::Socket => {
                let (a, b) = std::os::unix::net::UnixStream::pair().map_err(|e| self.no_fd(e))?;
                (a.into(), b.into())
            }
            Transport::Pipe => {
                let (r, w) = std::io::pipe().map_err(|e| self.no_fd(e))?;
                (r.into(), w.into())
            }
        };
        Ok((File::from(read), File::from(write)))
    }

    fn no_fd(&self, e: std::io::Error) -> LoadError {
        LoadError::setup(
            &self.item,
            format!("cannot open a channel ({e}); use fewer groups or raise `ulimit -n`"),
        )
    }

    /// Checks that every channel can be open at once: two descriptors per receiver.
    fn check_open_files(&self) -> Result<(), LoadError> {
        let needed = u64::from(self.groups) * u64::from(self.fds) * 2;
        let limit = sys::process::raise_open_files_limit().unwrap_or(1024);
        // Leave room for what rtlab and the other generators hold.
        if needed + 64 > limit {
            return Err(LoadError::setup(
                &self.item,
                format!(
                    "needs {needed} open files and the limit is {limit}; raise `ulimit -n` \
                     (hard limit) or use fewer groups or senders"
                ),
            ));
        }
        Ok(())
    }

    fn start_threads(&mut self, cpus: &CpuSet) -> Result<(), LoadError> {
        for g in 0..self.groups {
            let mut writers = Vec::with_capacity(self.fds as usize);
            for r in 0..self.fds {
                let (reader, writer) = self.channel()?;
                writers.push(writer);
                self.threads.spawn(
                    &format!("rtlab-msg{g}r{r}"),
                    cpus,
                    STACK,
                    move |shared, meter| {
                        let mut buf = [0u8; MESSAGE];
                        let mut reader = reader;
                        let mut partial = 0usize;
                        loop {
                            match reader.read(&mut buf[partial..]) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => {
                                    partial += n;
                                    let whole = (partial == MESSAGE) as u64;
                                    partial %= MESSAGE;
                                    meter.count(whole, n as u64);
                                    meter.tick(shared);
                                }
                            }
                        }
                    },
                )?;
            }
            let writers = Arc::new(writers);
            for s in 0..self.fds {
                let writers = Arc::clone(&writers);
                self.threads.spawn(
                    &format!("rtlab-msg{g}s{s}"),
                    cpus,
                    STACK,
                    move |shared, meter| {
                        let message = [0x5au8; MESSAGE];
                        'run: while !shared.stopping() {
                            for mut w in writers.iter() {
                                if w.write_all(&message).is_err() {
                                    break 'run;
                                }
                            }
                            meter.tick(shared);
                        }
                    },
                )?;
            }
        }
        Ok(())
    }

    fn start_processes(&mut self, cpus: &CpuSet) -> Result<(), LoadError> {
        let receivers = (self.groups * self.fds) as usize;
        let counters =
            Arc::new(SharedCounters::new(receivers).map_err(|e| LoadError::sys(&self.item, e))?);
        self.received = Some(Arc::clone(&counters));
        for g in 0..self.groups {
            let mut writers = Vec::with_capacity(self.fds as usize);
            for r in 0..self.fds {
                let (reader, writer) = self.channel()?;
                writers.push(writer);
                let slot = (g * self.fds + r) as usize;
                let counters = Arc::clone(&counters);
                self.children.fork_placed(cpus, move || {
                    let mut buf = [0u8; MESSAGE];
                    let mut reader = reader;
                    loop {
                        match reader.read(&mut buf) {
                            Ok(0) | Err(_) => return 0,
                            Ok(n) => {
                                counters.slot(slot).fetch_add(n as u64, Ordering::Relaxed);
                            }
                        }
                    }
                })?;
            }
            for _ in 0..self.fds {
                let writers = &writers;
                self.children.fork_placed(cpus, move || {
                    let message = [0x5au8; MESSAGE];
                    loop {
                        for mut w in writers.iter() {
                            if w.write_all(&message).is_err() {
                                return 0;
                            }
                        }
                    }
                })?;
            }
            // The parent's copies of the channels close here; the workers hold theirs.
        }
        Ok(())
    }
}

impl Generator for Messaging {
    fn start(&mut self, ctx: &StartContext<'_>) -> Result<(), LoadError> {
        self.check_open_files()?;
        self.cpus = ctx.cpus.clone();
        match self.tasks {
            TaskKind::Thread => self.start_threads(ctx.cpus)?,
            TaskKind::Process => self.start_processes(ctx.cpus)?,
        }
        self.threads.go();
        self.children.go();
        Ok(())
    }

    fn achieved(&self) -> Counters {
        if let Some(c) = self.stopped {
            return c;
        }
        match &self.received {
            Some(received) => {
                let bytes = received.sum();
                Counters {
                    ops: bytes / MESSAGE as u64,
                    bytes,
                    cpu_ns: self.children.cpu_ns(),
                }
            }
            None => self.threads.counters(),
        }
    }

    fn describe(&self) -> String {
        let (channel, kind) = match (self.transport, self.tasks) {
            (Transport::Socket, TaskKind::Thread) => ("UNIX socket pairs", "threads"),
            (Transport::Socket, TaskKind::Process) => ("UNIX socket pairs", "processes"),
            (Transport::Pipe, TaskKind::Thread) => ("pipes", "threads"),
            (Transport::Pipe, TaskKind::Process) => ("pipes", "processes"),
        };
        format!(
            "{} group{} of {} senders and {} receivers ({} {kind}), {MESSAGE}-byte messages \
             over {channel}, on {}",
            self.groups,
            if self.groups == 1 { "" } else { "s" },
            self.fds,
            self.fds,
            self.groups * self.fds * 2,
            self.cpus.with_noun()
        )
    }

    fn unit(&self) -> &'static str {
        "message"
    }

    fn tasks(&self) -> u32 {
        (self.threads.len() + self.children.len()) as u32
    }

    fn stop(&mut self) -> Counters {
        if self.stopped.is_none() {
            let mut counters = self.achieved();
            match self.tasks {
                TaskKind::Thread => counters = self.threads.stop(),
                TaskKind::Process => counters.cpu_ns = self.children.stop(),
            }
            self.stopped = Some(counters);
        }
        self.achieved()
    }
}
