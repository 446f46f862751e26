//! Byte searches eight bytes at a time (SIMD within a register) for the short runs a trace
//! line's columns are made of: the spaces that pad a column, the end of a word. `memchr`'s
//! vector searches pay a call and a setup each, which a run of ten bytes does not repay.

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const LOWS: u64 = u64::from_ne_bytes([0x7f; 8]);
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
const SPACES: u64 = u64::from_ne_bytes([b' '; 8]);

/// The first space in `b` from `from` on.
#[inline]
pub(crate) fn next_space(b: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(word) = b.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let v = u64::from_le_bytes(*word) ^ SPACES;
        // The lowest set bit marks the first space exactly (a borrow only runs upwards).
        let hit = v.wrapping_sub(ONES) & !v & HIGHS;
        if hit != 0 {
            return Some(at + (hit.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    b.get(at..)?.iter().position(|&c| c == b' ').map(|i| at + i)
}

/// The first byte of `b` from `from` on that is not a space; `b.len()` when there is none
/// (`from` when it is past the end).
#[inline]
pub(crate) fn skip_spaces(b: &[u8], from: usize) -> usize {
    let mut at = from;
    while let Some(word) = b.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let v = u64::from_le_bytes(*word) ^ SPACES;
        // A byte's high bit is set exactly when it is not zero (no carry between bytes).
        let hit = (((v & LOWS) + LOWS) | v) & HIGHS;
        if hit != 0 {
            return at + (hit.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while at < b.len() && b[at] == b' ' {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_searches_agree_with_byte_by_byte(
            bytes in proptest::collection::vec(prop_oneof![Just(b' '), Just(b'a'), Just(0xa0u8), Just(0x20u8 ^ 0x80), any::<u8>()], 0..40),
            from in 0usize..44,
        ) {
            let want_space = bytes.get(from..).and_then(|r| r.iter().position(|&c| c == b' ')).map(|i| from + i);
            prop_assert_eq!(next_space(&bytes, from), want_space);
            if from <= bytes.len() {
                let want = bytes[from..].iter().position(|&c| c != b' ').map_or(bytes.len(), |i| from + i);
                prop_assert_eq!(skip_spaces(&bytes, from), want);
            }
        }
    }
}
