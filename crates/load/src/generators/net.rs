//! `net[:tcp|udp][:FLOWS]`: network-stack load over loopback (127.0.0.1 only, so nothing
//! leaves the machine). Each TCP flow is a connected pair of sockets with a thread writing
//! 16 KiB messages into one end and a thread reading the other; each UDP flow is a thread
//! sending 1 KiB datagrams, as fast as the socket takes them, to a thread receiving them.
//! Both protocols by default, one flow each. Loopback traffic runs the whole protocol stack
//! in softirq context (NET_RX) on the sending CPU, which is where it hurts real-time tasks.
//!
//! What is achieved: messages (TCP messages plus UDP datagrams) and bytes received. UDP has no
//! flow control, so datagrams the receiver could not take in time are dropped; the share lost
//! is reported in a note.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use model::CpuSet;
use model::load::spec::{Protocols, format_bytes};

use crate::worker::Workers;
use crate::{Counters, Generator, LoadError, StartContext};

/// Bytes per TCP message.
const TCP_MESSAGE: usize = 16 * 1024;
/// Bytes per UDP datagram.
const DATAGRAM: usize = 1024;
/// How long a blocked socket call waits before looking at the stop flag.
const POLL: Duration = Duration::from_millis(100);
/// Stack of a network thread (its buffer lives on the heap).
const STACK: usize = 64 * 1024;

/// TCP and UDP traffic over loopback.
#[derive(Debug)]
pub struct NetLoad {
    item: String,
    protocols: Protocols,
    flows: u32,
    cpus: CpuSet,
    tcp: Workers,
    udp: Workers,
    /// UDP datagrams sent (received ones are in `udp`'s counters).
    udp_sent: Arc<AtomicU64>,
}

impl NetLoad {
    /// `flows` flows of each protocol in `protocols`.
    pub fn new(item: String, protocols: Protocols, flows: u32) -> NetLoad {
        NetLoad {
            tcp: Workers::new(&item),
            udp: Workers::new(&item),
            item,
            protocols,
            flows,
            cpus: CpuSet::new(),
            udp_sent: Arc::default(),
        }
    }

    fn err(&self, what: &str, e: std::io::Error) -> LoadError {
        LoadError::setup(&self.item, format!("{what} on 127.0.0.1: {e}"))
    }

    fn start_tcp(&mut self, cpus: &CpuSet) -> Result<(), LoadError> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| self.err("cannot listen for TCP", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| self.err("no TCP address", e))?;
        for f in 0..self.flows {
            let client =
                TcpStream::connect(addr).map_err(|e| self.err("cannot connect over TCP", e))?;
            let (server, _) = listener
                .accept()
                .map_err(|e| self.err("cannot accept a TCP connection", e))?;
            for s in [&client, &server] {
                s.set_read_timeout(Some(POLL))
                    .and_then(|()| s.set_write_timeout(Some(POLL)))
                    .map_err(|e| self.err("cannot set a TCP timeout", e))?;
            }
            self.tcp.spawn(
                &format!("rtlab-tcp{f}rx"),
                cpus,
                STACK,
                move |shared, meter| {
                    let mut server = server;
                    let mut buf = vec![0u8; TCP_MESSAGE];
                    let mut partial = 0;
                    while !shared.stopping() {
                        match server.read(&mut buf[partial..]) {
                            Ok(0) => break,
                            Ok(n) => {
                                partial += n;
                                let whole = u64::from(partial == TCP_MESSAGE);
                                partial %= TCP_MESSAGE;
                                meter.count(whole, n as u64);
                            }
                            Err(e) if timed_out(&e) => {}
                            Err(_) => break,
                        }
                        meter.tick(shared);
                    }
                },
            )?;
            self.tcp.spawn(
                &format!("rtlab-tcp{f}tx"),
                cpus,
                STACK,
                move |shared, meter| {
                    let mut client = client;
                    let message = vec![0xa5u8; TCP_MESSAGE];
                    let mut offset = 0;
                    while !shared.stopping() {
                        match client.write(&message[offset..]) {
                            Ok(n) => offset = (offset + n) % TCP_MESSAGE,
                            Err(e) if timed_out(&e) => {}
                            Err(_) => break,
                        }
                        meter.tick(shared);
                    }
                },
            )?;
        }
        Ok(())
    }

    fn start_udp(&mut self, cpus: &CpuSet) -> Result<(), LoadError> {
        for f in 0..self.flows {
            let receiver = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
                .map_err(|e| self.err("cannot bind a UDP socket", e))?;
            let to: SocketAddr = receiver
                .local_addr()
                .map_err(|e| self.err("no UDP address", e))?;
            let sender = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
                .and_then(|s| s.connect(to).map(|()| s))
                .map_err(|e| self.err("cannot connect a UDP socket", e))?;
            receiver
                .set_read_timeout(Some(POLL))
                .and_then(|()| sender.set_write_timeout(Some(POLL)))
                .map_err(|e| self.err("cannot set a UDP timeout", e))?;
            self.udp.spawn(
                &format!("rtlab-udp{f}rx"),
                cpus,
                STACK,
                move |shared, meter| {
                    let mut buf = vec![0u8; DATAGRAM];
                    while !shared.stopping() {
                        match receiver.recv(&mut buf) {
                            Ok(n) => meter.count(1, n as u64),
                            Err(e) if timed_out(&e) => {}
                            Err(_) => break,
                        }
                        meter.tick(shared);
                    }
                },
            )?;
            let sent = Arc::clone(&self.udp_sent);
            self.udp.spawn(
                &format!("rtlab-udp{f}tx"),
                cpus,
                STACK,
                move |shared, meter| {
                    let datagram = vec![0x3cu8; DATAGRAM];
                    let mut unpublished = 0;
                    while !shared.stopping() {
                        // ENOBUFS or ECONNREFUSED (a full or just-closed receiver) are
                        // datagrams lost, which the note counts; nothing to stop for.
                        if sender.send(&datagram).is_ok() {
                            unpublished += 1;
                            if unpublished == 64 {
                                sent.fetch_add(unpublished, Ordering::Relaxed);
                                unpublished = 0;
                            }
                        }
                        meter.tick(shared);
                    }
                    sent.fetch_add(unpublished, Ordering::Relaxed);
                },
            )?;
        }
        Ok(())
    }
}

/// Whether a socket call only ran into its timeout.
fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

impl Generator for NetLoad {
    fn start(&mut self, ctx: &StartContext<'_>) -> Result<(), LoadError> {
        self.cpus = ctx.cpus.clone();
        if self.protocols != Protocols::Udp {
            self.start_tcp(ctx.cpus)?;
        }
        if self.protocols != Protocols::Tcp {
            self.start_udp(ctx.cpus)?;
        }
        self.tcp.go();
        self.udp.go();
        Ok(())
    }

    fn achieved(&self) -> Counters {
        let (t, u) = (self.tcp.counters(), self.udp.counters());
        Counters {
            ops: t.ops + u.ops,
            bytes: t.bytes + u.bytes,
            cpu_ns: t.cpu_ns + u.cpu_ns,
        }
    }

    fn describe(&self) -> String {
        let flows = if self.flows == 1 { "flow" } else { "flows" };
        let tcp = format!("{} TCP {flows} of 16 KiB messages", self.flows);
        let udp = format!("{} UDP {flows} of 1 KiB datagrams", self.flows);
        let what = match self.protocols {
            Protocols::Tcp => tcp,
            Protocols::Udp => udp,
            Protocols::Both => format!("{tcp} and {udp}"),
        };
        format!("{what} over 127.0.0.1, on {}", self.cpus.with_noun())
    }

    fn unit(&self) -> &'static str {
        "message"
    }

    fn tasks(&self) -> u32 {
        (self.tcp.len() + self.udp.len()) as u32
    }

    fn stop(&mut self) -> Counters {
        self.udp.stop();
        self.tcp.stop();
        self.achieved()
    }

    fn notes(&self) -> Vec<String> {
        let sent = self.udp_sent.load(Ordering::Relaxed);
        let received = self.udp.counters().ops;
        if self.protocols == Protocols::Tcp || sent == 0 {
            return Vec::new();
        }
        let mut parts = Vec::new();
        if self.protocols != Protocols::Udp {
            let tcp = self.tcp.counters().bytes as f64;
            parts.push(format!("tcp {} received", format_bytes(tcp)));
        }
        parts.push(format!(
            "udp {} of {} datagrams sent received ({:.1}% lost)",
            received,
            sent,
            sent.saturating_sub(received) as f64 * 100.0 / sent as f64
        ));
        vec![format!("over the whole run: {}", parts.join(", "))]
    }
}
