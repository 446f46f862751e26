//! One ring-buffer page: its header (timestamp, commit, the lost-events flags) and the event
//! headers inside it (`type_len`/`time_delta`, time extends, absolute time stamps, padding),
//! decoded with every length checked against the page.

use crate::bytes::Endian;
use crate::format::PageHeader;

/// `commit`'s flag: events were lost before this page.
const MISSED_EVENTS: u64 = 1 << 31;
/// `commit`'s flag: how many is stored after the data.
const MISSED_STORED: u64 = 1 << 30;
/// `commit`'s bits that count the data's bytes.
const COMMIT_MASK: u64 = (1 << 27) - 1;

/// Padding (or a discarded event).
const PADDING: u32 = 29;
/// A time extend: the delta did not fit in 27 bits.
const TIME_EXTEND: u32 = 30;
/// An absolute time stamp.
const TIME_STAMP: u32 = 31;
/// The timestamp bits an absolute time stamp does not carry.
const TS_MSB: u64 = !((1u64 << 59) - 1);

/// A page's header, read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    /// The timestamp events' deltas start from.
    pub ts: u64,
    /// Where the events start in the buffer.
    pub data: usize,
    /// Where they end (the commit's size past the data).
    pub end: usize,
    /// Events lost before the page: `Some(None)` when lost but not counted.
    pub lost: Option<Option<u64>>,
}

/// Reads the header of the page at `buf[at..at + len]`; `None` when the page is damaged
/// (its commit claims more than the page holds).
pub fn page(buf: &[u8], at: usize, len: usize, h: &PageHeader, endian: Endian) -> Option<Page> {
    let p = buf.get(at..at.checked_add(len)?)?;
    let ts = endian.u64(p.get(h.ts_offset..h.ts_offset + 8)?);
    let commit = endian.uint(p.get(h.commit_offset..)?, h.commit_size)?;
    let size = (commit & COMMIT_MASK) as usize;
    let end = h.data_offset.checked_add(size)?;
    if end > len {
        return None;
    }
    let lost = if commit & MISSED_EVENTS == 0 {
        None
    } else if commit & MISSED_STORED != 0 {
        Some(endian.uint(p.get(end..)?, h.commit_size))
    } else {
        Some(None)
    };
    Some(Page {
        ts,
        data: at + h.data_offset,
        end: at + end,
        lost,
    })
}

/// What the next event header in a page holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// An event: its payload `buf[start..start + len]`; `next` is where the one after starts.
    Event {
        /// Where the payload starts.
        start: usize,
        /// Its length.
        len: usize,
        /// Where the next event header is.
        next: usize,
    },
    /// The page's events are done.
    End,
    /// An event header points outside the page.
    Damaged,
}

/// From `pos`, past time extends and padding, to the next event of the page ending at `end`;
/// `ts` is carried along (the event's own timestamp once it returns an event).
#[inline]
pub fn step(buf: &[u8], mut pos: usize, end: usize, ts: &mut u64, endian: Endian) -> Step {
    loop {
        let Some(head) = buf.get(pos..pos + 4).filter(|_| pos + 4 <= end) else {
            return Step::End;
        };
        let word = endian.u32(head);
        let (type_len, delta) = match endian {
            Endian::Little => (word & 0x1f, u64::from(word >> 5)),
            Endian::Big => (word >> 27, u64::from(word & ((1 << 27) - 1))),
        };
        let array = || {
            buf.get(pos + 4..pos + 8)
                .filter(|_| pos + 8 <= end)
                .map(|b| endian.u32(b))
        };
        match type_len {
            PADDING => {
                // A null event (no delta) ends the page's data; a discarded event or the
                // padding at a page's tail says how long it is.
                let Some(len) = array().filter(|_| delta != 0) else {
                    return Step::End;
                };
                *ts = ts.wrapping_add(delta);
                pos = match (pos + 4).checked_add(len as usize) {
                    Some(n) => n,
                    None => return Step::Damaged,
                };
            }
            TIME_EXTEND => {
                let Some(ext) = array() else {
                    return Step::Damaged;
                };
                *ts = ts.wrapping_add((u64::from(ext) << 27) + delta);
                pos += 8;
            }
            TIME_STAMP => {
                let Some(ext) = array() else {
                    return Step::Damaged;
                };
                let mut abs = (u64::from(ext) << 27) | delta;
                if *ts & TS_MSB != 0 {
                    abs |= *ts & TS_MSB;
                    if abs < *ts {
                        abs = abs.wrapping_add(1 << 59);
                    }
                }
                *ts = abs;
                pos += 8;
            }
            0 => {
                // A long event: its length (counting the length word) in the array.
                let Some(len) = array().and_then(|l| (l as usize).checked_sub(4)) else {
                    return Step::Damaged;
                };
                return event(pos + 8, (len + 3) & !3, end, ts, delta);
            }
            n => return event(pos + 4, n as usize * 4, end, ts, delta),
        }
    }
}

/// An event's payload at `start`, `len` long, if it fits the page; its delta added to `ts`.
#[inline]
fn event(start: usize, len: usize, end: usize, ts: &mut u64, delta: u64) -> Step {
    if start + len > end {
        return Step::Damaged;
    }
    *ts = ts.wrapping_add(delta);
    Step::Event {
        start,
        len,
        next: start + len,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An event header word.
    pub(crate) fn head(endian: Endian, type_len: u32, delta: u32) -> u32 {
        match endian {
            Endian::Little => type_len | (delta << 5),
            Endian::Big => (type_len << 27) | delta,
        }
    }

    fn page_of(endian: Endian, events: &[(u32, u32, &[u8])], commit_flags: u64) -> Vec<u8> {
        let mut data = Vec::new();
        for &(t, d, payload) in events {
            endian.put(&mut data, u64::from(head(endian, t, d)), 4);
            data.extend_from_slice(payload);
        }
        let mut p = Vec::new();
        endian.put(&mut p, 1000, 8);
        endian.put(&mut p, data.len() as u64 | commit_flags, 8);
        p.extend_from_slice(&data);
        p.resize(256, 0);
        p
    }

    #[test]
    fn a_page_yields_its_events_with_their_times_in_either_order() {
        for e in [Endian::Little, Endian::Big] {
            let mut ext = Vec::new();
            e.put(&mut ext, 2, 4);
            let mut long = Vec::new();
            e.put(&mut long, 12, 4);
            long.extend_from_slice(b"abcdefgh");
            let mut pad = Vec::new();
            // The padding's length counts its header: 8 bytes in all.
            e.put(&mut pad, 4, 4);
            let p = page_of(
                e,
                &[
                    (1, 5, b"AAAA"),
                    (30, 3, &ext),
                    (0, 1, &long),
                    (29, 7, &pad),
                    (2, 10, b"BBBBBBBB"),
                ],
                0,
            );
            let pg = page(&p, 0, p.len(), &PageHeader::LONG64, e).unwrap();
            assert_eq!(pg.lost, None);
            let mut ts = pg.ts;
            let mut pos = pg.data;
            let mut got = Vec::new();
            while let Step::Event { start, len, next } = step(&p, pos, pg.end, &mut ts, e) {
                got.push((ts, p[start..start + len].to_vec()));
                pos = next;
            }
            assert_eq!(
                got,
                vec![
                    (1005, b"AAAA".to_vec()),
                    (1005 + (2 << 27) + 3 + 1, b"abcdefgh".to_vec()),
                    (1005 + (2 << 27) + 3 + 1 + 7 + 10, b"BBBBBBBB".to_vec()),
                ],
                "{e:?}"
            );
        }
    }

    #[test]
    fn damage_and_losses_are_seen_not_trusted() {
        let e = Endian::Little;
        let p = page_of(e, &[(3, 1, b"AAAA")], 0);
        let pg = page(&p, 0, p.len(), &PageHeader::LONG64, e).unwrap();
        let mut ts = 0;
        assert_eq!(
            step(&p, pg.data, pg.end, &mut ts, e),
            Step::Damaged,
            "runs past commit"
        );
        let mut lost = page_of(e, &[(1, 1, b"AAAA")], MISSED_EVENTS | MISSED_STORED);
        lost[16 + 8..16 + 16].copy_from_slice(&77u64.to_le_bytes());
        assert_eq!(
            page(&lost, 0, lost.len(), &PageHeader::LONG64, e)
                .unwrap()
                .lost,
            Some(Some(77))
        );
        let mut big = page_of(e, &[], 0);
        big[8..16].copy_from_slice(&4096u64.to_le_bytes());
        assert_eq!(
            page(&big, 0, big.len(), &PageHeader::LONG64, e),
            None,
            "commit past the page"
        );
        let mut zero = page_of(e, &[(0, 1, &[0, 0, 0, 0])], 0);
        zero.truncate(256);
        let pg = page(&zero, 0, zero.len(), &PageHeader::LONG64, e).unwrap();
        assert_eq!(
            step(&zero, pg.data, pg.end, &mut ts, e),
            Step::Damaged,
            "length below its own word"
        );
    }
}
