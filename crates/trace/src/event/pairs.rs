//! A fields text's `key=value` pairs: found in one pass ([`Pairs`], any layout, a value running
//! to the next ` word=` so task names with spaces survive), or read straight off the kernel's
//! own layout when the keys are the ones expected, in order ([`in_order`]: no key byte
//! scanned). Every field of every text line goes through here.

use crate::swar::next_space;

/// The `key=value` pairs of a fields text, in order, found in one pass; a value runs to the
/// next ` word=` (so task names with spaces survive). At most [`Pairs::MAX`] are kept.
#[derive(Clone, Debug)]
pub struct Pairs<'a> {
    text: &'a str,
    /// (key start, `=` position) of each pair.
    keys: [(u32, u32); Pairs::MAX],
    /// Each key's first eight bytes as a number: most keys are told apart by it and their
    /// length, without comparing bytes.
    heads: [u64; Pairs::MAX],
    len: usize,
}

impl<'a> Pairs<'a> {
    /// Pairs kept at most.
    pub const MAX: usize = 16;

    /// Scans `text`: a key starts the text or follows a space, runs over [`KEY_BYTE`]s and
    /// ends at `=`; its value runs to the next key.
    pub fn of(text: &'a str) -> Pairs<'a> {
        let b = text.as_bytes();
        let mut keys = [(0u32, 0u32); Pairs::MAX];
        let mut heads = [0u64; Pairs::MAX];
        let mut n = 0;
        let limit = b.len().min(u32::MAX as usize);
        let mut i = 0;
        while i < limit && n < Pairs::MAX {
            let mut j = i;
            while j < limit && KEY_BYTE[usize::from(b[j])] {
                j += 1;
            }
            if j > i && j < limit && b[j] == b'=' {
                keys[n] = (i as u32, j as u32);
                heads[n] = head(&b[i..j]);
                n += 1;
                j += 1;
            }
            match next_space(&b[..limit], j) {
                Some(space) => i = space + 1,
                None => break,
            }
        }
        Pairs {
            text,
            keys,
            heads,
            len: n,
        }
    }

    /// The value of `key` (its first pair).
    pub fn get(&self, key: &str) -> Option<&'a str> {
        let (b, want) = (self.text.as_bytes(), key.as_bytes());
        let want_head = head(want);
        let k = (0..self.len).find(|&k| {
            let (s, e) = (self.keys[k].0 as usize, self.keys[k].1 as usize);
            self.heads[k] == want_head
                && e - s == want.len()
                && (want.len() <= 8 || &b[s..e] == want)
        })?;
        let start = self.keys[k].1 as usize + 1;
        let end = if k + 1 < self.len {
            self.keys[k + 1].0 as usize
        } else {
            self.text.len()
        };
        Some(self.text[start..end].trim_ascii_end())
    }

    /// The value of `key`, parsed.
    pub(super) fn num<T: std::str::FromStr>(&self, key: &str) -> Option<T> {
        self.get(key)?.parse().ok()
    }
}

/// The bytes of a field's key (`prev_comm`): letters, digits and `_` (a table: one load a
/// byte, on every field of every line).
const KEY_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_';
        c += 1;
    }
    t
};

/// A key's first eight bytes (fewer, zero-padded) as a number.
#[inline]
fn head(key: &[u8]) -> u64 {
    match key.first_chunk::<8>() {
        Some(eight) => u64::from_le_bytes(*eight),
        None => {
            let mut eight = [0u8; 8];
            eight[..key.len()].copy_from_slice(key);
            u64::from_le_bytes(eight)
        }
    }
}

/// The value of `key` in `key=value` text: from after `key=` to the next ` word=` or the end.
pub fn value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    Pairs::of(text).get(key)
}

/// The values of `keys` when they are `text`'s first keys, in this order (the kernel's own
/// layout; keys after them are left unread): what [`Pairs::get`] gives for each, found by
/// comparing each expected key where it should be rather than scanning every key byte.
/// `None` when the text is laid out otherwise; [`Pairs`] reads it then.
#[inline]
pub(super) fn in_order<'a, const N: usize>(text: &'a str, keys: [&str; N]) -> Option<[&'a str; N]> {
    let mut out = [""; N];
    read_in_order(text, &keys, &mut out).then_some(out)
}

/// [`in_order`]'s work, once for every count of keys: whether `out` holds the values.
fn read_in_order<'a>(text: &'a str, keys: &[&str], out: &mut [&'a str]) -> bool {
    let b = text.as_bytes();
    let Some(first) = keys.first() else {
        return false;
    };
    if !key_at(b, 0, first) {
        return false;
    }
    let mut start = first.len() + 1;
    for (k, value) in out.iter_mut().enumerate() {
        let next = keys.get(k + 1);
        let mut from = start;
        let end = loop {
            let Some(space) = next_space(b, from) else {
                break b.len();
            };
            let at = space + 1;
            if next.is_some_and(|n| key_at(b, at, n)) {
                break space;
            }
            if any_key_at(b, at) {
                // Another key (not the expected one), or one after the last asked for.
                if next.is_some() {
                    return false;
                }
                break space;
            }
            from = at;
        };
        if end == b.len() && next.is_some() {
            return false;
        }
        *value = text[start..end].trim_ascii_end();
        if let Some(n) = next {
            start = end + 1 + n.len() + 1;
        }
    }
    true
}

/// Whether `key=` is at `at`.
#[inline]
fn key_at(b: &[u8], at: usize, key: &str) -> bool {
    b.get(at..)
        .is_some_and(|rest| rest.starts_with(key.as_bytes()) && rest.get(key.len()) == Some(&b'='))
}

/// Whether some key (a run of [`KEY_BYTE`]s and `=`) is at `at`.
#[inline]
fn any_key_at(b: &[u8], at: usize) -> bool {
    let mut j = at;
    while j < b.len() && KEY_BYTE[usize::from(b[j])] {
        j += 1;
    }
    j > at && j < b.len() && b[j] == b'='
}
