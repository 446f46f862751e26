//! Memory residency for the measuring threads: locking all pages (mlockall), pre-faulting
//! stacks and heap buffers so the loop never takes a page fault, and the process's own memory
//! figures (VmHWM, VmLck from `/proc/self/status`); and the mappings load generators use (an
//! anonymous mapping to fault in and give back, counters shared with forked workers) and the
//! memory available to them.
//!
//! These run before and after the measuring loop, never inside it. This module locks and
//! touches memory; it must not decide whether locking is required (`--no-mlock` is the
//! caller's choice), and it must not allocate on the paths that pre-fault.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, Result, Root};

/// Bytes the stack pre-fault touches per recursion step.
const STACK_CHUNK: usize = 16 * 1024;
/// Bytes left untouched below the deepest pre-faulted frame: signal frames, the guard page,
/// and the callees of whoever called [`prefault_stack`].
const STACK_MARGIN: usize = 64 * 1024;
/// What [`prefault_stack`] touches at most when the stack's bounds cannot be read.
const STACK_FALLBACK: usize = 64 * 1024;

/// Locks every current and future page of the process in RAM (mlockall MCL_CURRENT |
/// MCL_FUTURE), so the measuring loop never waits for a page to be read back.
///
/// Threads created afterwards have their whole stack locked: give them small explicit stacks.
pub fn lock_all_memory() -> Result<()> {
    // SAFETY: mlockall takes only flags and touches no memory of ours.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    let path = PathBuf::from("mlockall(MCL_CURRENT | MCL_FUTURE)");
    match err.raw_os_error() {
        Some(libc::ENOMEM | libc::EPERM) => Err(Error::PermissionDenied {
            path,
            fix: format!(
                "RLIMIT_MEMLOCK is {} and the process needs more: run as root, or `ulimit -l \
                 unlimited` in the shell that starts rtlab, or `LimitMEMLOCK=infinity` in its \
                 systemd unit, or pass --no-mlock to measure without locked memory",
                format_limit(memlock_limit())
            ),
        }),
        _ => Err(Error::from_syscall(path.to_string_lossy(), err)),
    }
}

/// Makes every thread allocate from glibc's main heap (mallopt M_ARENA_MAX = 1).
///
/// By default glibc gives each new thread its own arena, reserving 64 MiB of address space per
/// thread; under mlockall(MCL_FUTURE) those reservations count as locked memory and can exceed
/// RLIMIT_MEMLOCK. Measuring threads allocate only while they set up, so sharing one heap costs
/// nothing. Call it before starting threads. A no-op on C libraries other than glibc.
pub fn single_malloc_arena() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only changes allocator tuning; M_ARENA_MAX = 1 is a documented setting.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Undoes [`lock_all_memory`] (munlockall). Never fails in a way worth reporting.
pub fn unlock_all_memory() {
    // SAFETY: munlockall takes no arguments.
    unsafe { libc::munlockall() };
}

/// The soft RLIMIT_MEMLOCK in bytes; `None` when unlimited.
pub fn memlock_limit() -> Option<u64> {
    soft_limit(Limit::MemLock)
}

/// The resource limits this crate reads.
#[derive(Clone, Copy)]
pub(crate) enum Limit {
    /// RLIMIT_MEMLOCK (bytes).
    MemLock,
    /// RLIMIT_RTPRIO (a priority).
    RtPrio,
}

/// The soft limit of `resource`; `None` when unlimited (or unreadable, which getrlimit only is
/// for unknown resources).
pub(crate) fn soft_limit(resource: Limit) -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit; the resources are known to every kernel.
    // (The constants' C types differ between glibc and musl, hence one call per arm.)
    let rc = unsafe {
        match resource {
            Limit::MemLock => libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit),
            Limit::RtPrio => libc::getrlimit(libc::RLIMIT_RTPRIO, &mut limit),
        }
    };
    if rc != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    // rlim_t is 32 bits wide on some 32-bit targets.
    #[allow(clippy::unnecessary_cast)]
    Some(limit.rlim_cur as u64)
}

/// A byte limit for messages: `unlimited`, `64 MiB` or `8192 KiB`.
pub(crate) fn format_limit(bytes: Option<u64>) -> String {
    match bytes {
        None => "unlimited".to_string(),
        Some(b) if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        Some(b) if b % 1024 == 0 => format!("{} KiB", b >> 10),
        Some(b) => format!("{b} bytes"),
    }
}

/// Touches up to `bytes` of the calling thread's stack below the current frame, page by page,
/// so those pages are resident (and, after [`lock_all_memory`], locked) before the loop.
///
/// Safe for any `bytes`: it reads the thread's stack bounds (pthread_getattr_np) and stops
/// [`STACK_MARGIN`] (64 KiB) short of the stack's end; where the bounds cannot be read it touches
/// at most 64 KiB. Returns the number of bytes touched.
#[inline(never)]
pub fn prefault_stack(bytes: usize) -> usize {
    let here = std::hint::black_box(0u8);
    let sp = std::ptr::addr_of!(here) as usize;
    let room = match stack_low() {
        Some(low) if sp > low => (sp - low).saturating_sub(STACK_MARGIN),
        _ => STACK_FALLBACK,
    };
    // Each step's frame is a little larger than its chunk; count a page for that.
    let steps = bytes.min(room) / (STACK_CHUNK + 4096);
    touch_stack(steps);
    steps * STACK_CHUNK
}

/// One recursion step: a chunk on this frame, written every page, then the next step deeper.
#[inline(never)]
fn touch_stack(steps: usize) {
    if steps == 0 {
        return;
    }
    let mut chunk = [0u8; STACK_CHUNK];
    for page in chunk.chunks_mut(4096) {
        // SAFETY: `page` is a valid, writable, non-empty slice of this frame's array.
        unsafe { std::ptr::write_volatile(page.as_mut_ptr(), 1) };
    }
    std::hint::black_box(&mut chunk);
    touch_stack(steps - 1);
    // Using the chunk after the call keeps the frame alive (no tail call reuses it).
    std::hint::black_box(&chunk);
}

/// The lowest address of the calling thread's stack.
fn stack_low() -> Option<usize> {
    // SAFETY: an all-zero pthread_attr_t is a valid output buffer for pthread_getattr_np, which
    // initialises it; it is destroyed below and its stack fields only read in between.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (rc == 0 && !addr.is_null()).then_some(addr as usize)
    }
}

/// Makes every page of `slice` resident and writable by rewriting one element per page with an
/// atomic `fetch_add(0)`, which leaves every value as it was even under concurrent use.
pub fn touch_pages(slice: &[AtomicU64]) {
    let per_page = (page_size() / std::mem::size_of::<AtomicU64>()).max(1);
    for cell in slice.iter().step_by(per_page) {
        cell.fetch_add(0, Ordering::Relaxed);
    }
    if let Some(last) = slice.last() {
        last.fetch_add(0, Ordering::Relaxed);
    }
}

/// Makes every page of `buf` resident and writable, leaving its contents unchanged.
pub fn prefault_bytes(buf: &mut [u8]) {
    let page = page_size();
    let last = buf.len().checked_sub(1);
    for i in (0..buf.len()).step_by(page).chain(last) {
        let byte = &mut buf[i];
        // SAFETY: `byte` is a valid, aligned, exclusive reference for the read and the write.
        unsafe { std::ptr::write_volatile(byte, std::ptr::read_volatile(byte)) };
    }
}

/// The size of a memory page (4 KiB on x86, 4, 16 or 64 KiB on arm64).
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as usize } else { 4096 }
}

/// The process's peak resident set (VmHWM) in KiB; `None` when `/proc` cannot tell.
pub fn peak_rss_kib() -> Option<u64> {
    status_kib(&Root::host().read("/proc/self/status").ok()?, "VmHWM")
}

/// The process's locked memory (VmLck) in KiB; `None` when `/proc` cannot tell.
pub fn locked_kib() -> Option<u64> {
    status_kib(&Root::host().read("/proc/self/status").ok()?, "VmLck")
}

/// The value of a `Key:   123 kB` line of `/proc/PID/status`.
pub(crate) fn status_kib(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(':')?;
        rest.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

/// An anonymous private memory mapping, unmapped on drop: for load that must fault pages in
/// and give them back to the kernel (mmap, first touch, munmap), which heap allocations
/// recycle without the kernel seeing.
#[derive(Debug)]
pub struct AnonMap {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value alone.
unsafe impl Send for AnonMap {}

impl AnonMap {
    /// Maps `len` bytes (rounded up to whole pages by the kernel), readable and writable, not
    /// yet backed by pages: the first touch of each page faults.
    pub fn new(len: usize) -> Result<AnonMap> {
        let len = len.max(1);
        let ptr = map_anonymous(len, libc::MAP_PRIVATE)?;
        Ok(AnonMap { ptr, len })
    }

    /// The mapping's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never: at least one byte is mapped).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes one byte into every page, so each page not yet backed faults in exactly once
    /// (a write fault allocates a page; a read would map the zero page and fault again on the
    /// first write). Returns the number of pages.
    pub fn touch_for_write(&mut self) -> usize {
        let page = page_size();
        let bytes = self.as_mut_slice();
        let mut pages = 0;
        for i in (0..bytes.len()).step_by(page) {
            // SAFETY: `i` is inside the mapping; the volatile write cannot be optimised away.
            unsafe { std::ptr::write_volatile(&mut bytes[i], 1) };
            pages += 1;
        }
        pages
    }

    /// The mapped bytes (zero until written).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` points to `len` readable, writable bytes owned by `self`, borrowed
        // mutably for the slice's lifetime.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the region mmap returned; no slice of it outlives `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Counters in anonymous *shared* memory: slots that a parent and the worker processes it
/// forks afterwards all see, so forked load workers can count what they do without a pipe or
/// a system call. Each slot has a cache line of its own, so workers do not slow each other
/// down; unmapped on drop (children keep their own mapping until they exit).
#[derive(Debug)]
pub struct SharedCounters {
    ptr: std::ptr::NonNull<AtomicU64>,
    slots: usize,
}

// SAFETY: the mapping holds only atomics, which are shared safely by design.
unsafe impl Send for SharedCounters {}
// SAFETY: as above: every access goes through an atomic.
unsafe impl Sync for SharedCounters {}

/// u64 values per cache line: one slot's stride.
const SLOT_STRIDE: usize = 64 / std::mem::size_of::<AtomicU64>();

impl SharedCounters {
    /// Maps `slots` zeroed counters shared with children forked later.
    pub fn new(slots: usize) -> Result<SharedCounters> {
        let slots = slots.max(1);
        let len = slots * SLOT_STRIDE * std::mem::size_of::<AtomicU64>();
        // Zero-filled memory is a valid AtomicU64 bit pattern, and the mapping is page-aligned.
        let ptr = map_anonymous(len, libc::MAP_SHARED)?.cast();
        Ok(SharedCounters { ptr, slots })
    }

    /// How many slots there are.
    pub fn len(&self) -> usize {
        self.slots
    }

    /// Whether there are none (never: at least one is mapped).
    pub fn is_empty(&self) -> bool {
        self.slots == 0
    }

    /// Slot `i` (panics when out of range).
    pub fn slot(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.slots, "slot {i} of {}", self.slots);
        // SAFETY: `i * SLOT_STRIDE` is inside the mapping, aligned for AtomicU64, and the
        // memory lives as long as `self`.
        unsafe { &*self.ptr.as_ptr().add(i * SLOT_STRIDE) }
    }

    /// The sum of every slot now.
    pub fn sum(&self) -> u64 {
        (0..self.slots)
            .map(|i| self.slot(i).load(Ordering::Relaxed))
            .sum()
    }
}

impl Drop for SharedCounters {
    fn drop(&mut self) {
        let len = self.slots * SLOT_STRIDE * std::mem::size_of::<AtomicU64>();
        // SAFETY: unmaps exactly the region mmap returned; no reference into it outlives
        // `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), len) };
    }
}

/// A fresh, zero-filled, readable and writable anonymous mapping of `len` (> 0) bytes;
/// `sharing` is `MAP_PRIVATE` or `MAP_SHARED` (seen by children forked later).
fn map_anonymous(len: usize, sharing: libc::c_int) -> Result<std::ptr::NonNull<u8>> {
    // SAFETY: a fresh anonymous mapping at an address of the kernel's choosing aliases
    // nothing.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            sharing | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(Error::from_syscall(
            format!("mmap({len} bytes)"),
            io::Error::last_os_error(),
        ));
    }
    Ok(std::ptr::NonNull::new(ptr.cast()).expect("mmap returned null"))
}

/// Memory the kernel estimates can be allocated without swapping (`MemAvailable` of
/// `/proc/meminfo`), in bytes; `None` when the file or the line is absent (kernels before 3.14).
pub fn available_bytes(root: &Root) -> Option<u64> {
    let text = root.read("/proc/meminfo").ok()?;
    status_kib(&text, "MemAvailable")?.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHILD: &str = "RTLAB_SYS_MLOCK_CHILD";

    #[test]
    fn parses_status_lines() {
        let status = "Name:\trtlab\nVmHWM:\t    1940 kB\nVmLck:\t       0 kB\nVmLckX:\t1 kB\n";
        assert_eq!(status_kib(status, "VmHWM"), Some(1940));
        assert_eq!(status_kib(status, "VmLck"), Some(0));
        assert_eq!(status_kib(status, "VmRSS"), None);
        assert_eq!(status_kib("VmHWM:\tlots kB\n", "VmHWM"), None);
        assert_eq!(status_kib("VmHWM:\t12", "VmHWM"), None);
    }

    #[test]
    fn formats_limits() {
        assert_eq!(format_limit(None), "unlimited");
        assert_eq!(format_limit(Some(8 << 20)), "8 MiB");
        assert_eq!(format_limit(Some(8192 * 1024 + 1024)), "8193 KiB");
        assert_eq!(format_limit(Some(1000)), "1000 bytes");
    }

    #[test]
    fn reads_own_memory_figures() {
        assert!(peak_rss_kib().unwrap() > 0);
        assert!(locked_kib().is_some());
    }

    #[test]
    fn prefaults_stacks_within_their_bounds() {
        let touched = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| prefault_stack(usize::MAX))
            .unwrap()
            .join()
            .unwrap();
        assert!(touched > 64 * 1024, "{touched}");
        assert!(touched < 256 * 1024 - STACK_MARGIN, "{touched}");
        let touched = std::thread::spawn(|| prefault_stack(100 * 1024))
            .join()
            .unwrap();
        assert_eq!(touched, 5 * STACK_CHUNK);
        assert_eq!(prefault_stack(0), 0);
    }

    #[test]
    fn touching_pages_keeps_values() {
        let cells: Vec<AtomicU64> = (0..10_000).map(AtomicU64::new).collect();
        touch_pages(&cells);
        touch_pages(&[]);
        assert!(
            cells
                .iter()
                .enumerate()
                .all(|(i, c)| c.load(Ordering::Relaxed) == i as u64)
        );
        let mut bytes: Vec<u8> = (0..20_000).map(|i| i as u8).collect();
        prefault_bytes(&mut bytes);
        prefault_bytes(&mut []);
        assert!(bytes.iter().enumerate().all(|(i, &b)| b == i as u8));
    }

    /// mlockall acts on the whole process: it runs in a child copy of this test binary so the
    /// other tests' threads are not locked.
    #[test]
    fn locks_memory_in_a_child_process() {
        if std::env::var_os(CHILD).is_some() {
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "mem::tests::mlock_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("1 passed"), "{text}");
        eprintln!(
            "{}",
            text.lines().find(|l| l.contains("mlock:")).unwrap_or("")
        );
    }

    #[test]
    fn mlock_child() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        assert_eq!(locked_kib(), Some(0));
        match lock_all_memory() {
            Ok(()) => {
                prefault_stack(64 * 1024);
                let locked = locked_kib().unwrap();
                println!("mlock: VmLck {locked} KiB, VmHWM {:?} KiB", peak_rss_kib());
                assert!(locked > 0);
                unlock_all_memory();
                assert_eq!(locked_kib(), Some(0));
            }
            Err(err) => {
                // Only when neither root nor CAP_IPC_LOCK nor a large enough limit.
                let msg = err.to_string();
                println!("mlock: refused: {msg}");
                assert!(msg.contains("RLIMIT_MEMLOCK is") && msg.contains("--no-mlock"));
                assert!(!crate::privilege::Privileges::current().can_lock_memory());
            }
        }
    }

    #[test]
    fn anonymous_mapping_is_zeroed_writable_and_unmapped() {
        let mut map = AnonMap::new(3 * 4096 + 1).unwrap();
        assert_eq!(map.len(), 3 * 4096 + 1);
        assert!(map.as_mut_slice().iter().all(|&b| b == 0));
        map.as_mut_slice()[4096 * 3] = 7;
        assert_eq!(map.as_mut_slice()[4096 * 3], 7);
        assert_eq!(
            map.touch_for_write(),
            (3 * 4096 + 1usize).div_ceil(page_size())
        );
        drop(map);
    }

    #[test]
    fn shared_counters_are_seen_by_a_forked_child() {
        let counters = SharedCounters::new(3).unwrap();
        assert_eq!(counters.len(), 3);
        let pid = crate::process::fork_worker(|| {
            counters.slot(1).fetch_add(5, Ordering::Relaxed);
            counters.slot(2).fetch_add(7, Ordering::Relaxed);
            0
        })
        .unwrap();
        crate::process::reap(pid, true).unwrap();
        assert_eq!(counters.slot(0).load(Ordering::Relaxed), 0);
        assert_eq!(counters.slot(1).load(Ordering::Relaxed), 5);
        assert_eq!(counters.sum(), 12);
    }

    #[test]
    fn available_memory_from_meminfo() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        assert_eq!(available_bytes(&root), None);
        std::fs::create_dir_all(root.path("/proc")).unwrap();
        std::fs::write(
            root.path("/proc/meminfo"),
            "MemTotal:       24684012 kB\nMemFree:        23636544 kB\n\
             MemAvailable:   24358800 kB\n",
        )
        .unwrap();
        assert_eq!(available_bytes(&root), Some(24_358_800 * 1024));
        assert!(available_bytes(&Root::host()).is_some_and(|b| b > 0));
    }
}
