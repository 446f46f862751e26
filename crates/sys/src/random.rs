//! Random bytes from the kernel (`getrandom(2)`), for secrets such as `rtlab serve`'s tokens.

/// Fills `buf` from the kernel's cryptographically secure generator, waiting until it is
/// initialised (at boot). Short reads and interruptions are retried.
pub fn fill(buf: &mut [u8]) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // The raw system call, not libc's weakly referenced `getrandom()` (see
        // `sched::current_tid`).
        // SAFETY: `rest` is valid, writable memory of `rest.len()` bytes.
        let n = unsafe { libc::syscall(libc::SYS_getrandom, rest.as_mut_ptr(), rest.len(), 0) };
        if n < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        done += n as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_draws_differ_and_fill_everything() {
        let (mut a, mut b) = ([0u8; 32], [0u8; 32]);
        super::fill(&mut a).unwrap();
        super::fill(&mut b).unwrap();
        assert_ne!(a, b);
        assert_ne!(a, [0; 32]);
    }
}
