//! The kernel's description of its records, as the recording saved it: event format files
//! (`events/SYSTEM/EVENT/format`: name, id, each field's offset, size and sign, the print
//! format) and the ring buffer's page header (`events/header_page`). Fields are read out of a
//! record by these, never by assumed offsets, so a kernel that moves a field still reads.

use crate::bytes::Endian;

/// Fields one format may hold; a real event has a few dozen at most.
pub const MAX_FIELDS: usize = 256;

/// Where a field's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loc {
    /// At its offset, its size long (a number, a fixed array); size 0 runs to the record's end.
    Fixed,
    /// `__data_loc`: a u32 at the offset holds the data's offset in the record (low 16 bits)
    /// and length (high 16).
    DataLoc,
    /// `__rel_loc`: the same, the offset counted from the end of the field.
    RelLoc,
}

/// One field of a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Its name (`prev_comm`).
    pub name: String,
    /// Its C type as declared (`char prev_comm[16]`, `__data_loc char[] name`).
    pub decl: String,
    /// Offset in the record.
    pub offset: u16,
    /// Size in bytes.
    pub size: u16,
    /// Whether it is signed.
    pub signed: bool,
    /// Where its bytes are.
    pub loc: Loc,
}

impl Field {
    /// The field as an unsigned number (1, 2, 4 or 8 bytes); `None` when the record is too
    /// short or the field is not a number.
    #[inline(always)]
    pub fn uint(&self, data: &[u8], endian: Endian) -> Option<u64> {
        let at = usize::from(self.offset);
        endian.uint(data.get(at..)?, usize::from(self.size))
    }

    /// The field as a signed number (sign-extended from its size when it is signed).
    #[inline(always)]
    pub fn int(&self, data: &[u8], endian: Endian) -> Option<i64> {
        let v = self.uint(data, endian)?;
        let bits = u32::from(self.size) * 8;
        Some(if self.signed && bits < 64 {
            let shift = 64 - bits;
            ((v << shift) as i64) >> shift
        } else {
            v as i64
        })
    }

    /// The field's bytes: a fixed field's, the rest of the record for size 0, or the dynamic
    /// data a `__data_loc`/`__rel_loc` field points at; `None` when it lies outside the record.
    #[inline]
    pub fn bytes<'d>(&self, data: &'d [u8], endian: Endian) -> Option<&'d [u8]> {
        let at = usize::from(self.offset);
        let end = at + usize::from(self.size);
        match self.loc {
            Loc::Fixed if self.size == 0 => data.get(at..),
            Loc::Fixed => data.get(at..end),
            Loc::DataLoc | Loc::RelLoc => {
                let word = endian.u32(data.get(at..at + 4)?);
                let mut start = (word & 0xffff) as usize;
                if self.loc == Loc::RelLoc {
                    start += at + 4;
                }
                let len = (word >> 16) as usize;
                data.get(start..start + len)
            }
        }
    }

    /// The field as text: its bytes up to the first NUL; `None` when not UTF-8.
    #[inline]
    pub fn str<'d>(&self, data: &'d [u8], endian: Endian) -> Option<&'d str> {
        c_str(self.bytes(data, endian)?)
    }
}

/// `b` up to its first NUL, as text; `None` when that is not UTF-8. Task names come through
/// here twice a switch, so the NUL is found a word at a time and ASCII skips the UTF-8 check.
#[inline]
pub fn c_str(b: &[u8]) -> Option<&str> {
    let text = &b[..nul_at(b)];
    if text.is_ascii() {
        // SAFETY: ASCII bytes are valid UTF-8.
        return Some(unsafe { std::str::from_utf8_unchecked(text) });
    }
    std::str::from_utf8(text).ok()
}

/// Where `b`'s first NUL is (its length when it has none).
#[inline]
fn nul_at(b: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut at = 0;
    while let Some(word) = b.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let v = u64::from_le_bytes(*word);
        // The lowest set bit marks the first zero byte exactly (false hits lie only above
        // a true one).
        let zero = v.wrapping_sub(ONES) & !v & HIGHS;
        if zero != 0 {
            return at + (zero.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let rest = b.get(at..).unwrap_or(&[]);
    at + rest.iter().position(|&c| c == 0).unwrap_or(rest.len())
}

/// One event's format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// Its system (`sched`, `irq`, `ftrace`).
    pub system: String,
    /// Its name (`sched_switch`).
    pub name: String,
    /// The id records carry in `common_type`.
    pub id: u32,
    /// Its fields, the common ones first.
    pub fields: Vec<Field>,
    /// The print format (`"prev_comm=%s ...", REC->prev_comm, ...`).
    pub print_fmt: String,
}

impl EventFormat {
    /// Reads a format file; `None` when it has no name or id.
    pub fn parse(system: &str, text: &str) -> Option<EventFormat> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        let mut print_fmt = String::new();
        for line in text.lines() {
            let line = line.trim_start();
            if let Some(v) = line.strip_prefix("name:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("ID:") {
                id = v.trim().parse().ok();
            } else if let Some(v) = line.strip_prefix("print fmt:") {
                print_fmt = v.trim().to_string();
            } else if line.starts_with("field:") && fields.len() < MAX_FIELDS {
                fields.extend(parse_field(line));
            }
        }
        Some(EventFormat {
            system: system.to_string(),
            name: name.filter(|n| !n.is_empty())?,
            id: id?,
            fields,
            print_fmt,
        })
    }

    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The value-to-name pairs of the print format's first `call` (`__print_symbolic`,
    /// `__print_flags`) whose pairs are numbers: softirq vectors' names, task states' letters.
    pub fn symbols(&self, call: &str) -> Vec<(u64, String)> {
        symbols(&self.print_fmt, call)
    }
}

/// `field:TYPE NAME[N];\toffset:O;\tsize:S;\tsigned:G;`
fn parse_field(line: &str) -> Option<Field> {
    let mut parts = line.split(';').map(str::trim);
    let decl = parts.next()?.strip_prefix("field:")?.trim();
    let (mut offset, mut size, mut signed) = (None, None, false);
    for p in parts {
        if let Some(v) = p.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let loc = if decl.starts_with("__data_loc") {
        Loc::DataLoc
    } else if decl.starts_with("__rel_loc") {
        Loc::RelLoc
    } else {
        Loc::Fixed
    };
    // The name is the last word, without an array suffix: `char prev_comm[16]` → prev_comm.
    let word = decl.rsplit([' ', '\t', '*']).next()?;
    let name = word.split('[').next()?.trim();
    if name.is_empty() {
        return None;
    }
    Some(Field {
        name: name.to_string(),
        decl: decl.to_string(),
        offset: offset?,
        size: size?,
        signed,
        loc,
    })
}

/// Pairs kept from one symbol table.
const MAX_SYMBOLS: usize = 256;

/// `{ 0x1, "S" }, { 2, "D" }` pairs after the first `call(` in `fmt`; pairs whose value is not
/// a number (an enum name) are left out.
pub fn symbols(fmt: &str, call: &str) -> Vec<(u64, String)> {
    let Some(start) = fmt.find(call) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut rest = &fmt[start + call.len()..];
    while out.len() < MAX_SYMBOLS {
        let Some(open) = rest.find('{') else { break };
        // The table ends with the call: a `)` before the next `{` closes it.
        if rest[..open].contains(')') && !out.is_empty() {
            break;
        }
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let pair = &rest[open + 1..open + close];
        rest = &rest[open + close + 1..];
        let Some((value, name)) = pair.split_once(',') else {
            continue;
        };
        let value = value.trim();
        let number = match value.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => value.parse().ok(),
        };
        let name = name.trim().trim_matches('"');
        if let Some(n) = number {
            out.push((n, name.to_string()));
        }
    }
    out
}

/// The ring buffer's page header: where the page's timestamp, its commit (the bytes of data
/// written, with the lost-events flags in its high bits) and its data are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageHeader {
    /// Offset of the page's u64 timestamp.
    pub ts_offset: usize,
    /// Offset of the commit word.
    pub commit_offset: usize,
    /// Its size: the kernel's long (4 or 8).
    pub commit_size: usize,
    /// Offset of the data.
    pub data_offset: usize,
}

impl PageHeader {
    /// The header of a 64-bit kernel (`commit` 8 bytes, data at 16).
    pub const LONG64: PageHeader = PageHeader {
        ts_offset: 0,
        commit_offset: 8,
        commit_size: 8,
        data_offset: 16,
    };

    /// Reads `events/header_page`; `None` when a field is missing or impossible.
    pub fn parse(text: &str) -> Option<PageHeader> {
        let fields: Vec<Field> = text
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with("field:"))
            .filter_map(|l| parse_field(&l.replace("field: ", "field:")))
            .collect();
        let get = |n: &str| fields.iter().find(|f| f.name == n);
        let ts = get("timestamp")?;
        let commit = get("commit")?;
        let data = get("data")?;
        let h = PageHeader {
            ts_offset: usize::from(ts.offset),
            commit_offset: usize::from(commit.offset),
            commit_size: usize::from(commit.size),
            data_offset: usize::from(data.offset),
        };
        let ok = ts.size == 8
            && matches!(h.commit_size, 4 | 8)
            && h.ts_offset + 8 <= h.data_offset
            && h.commit_offset + h.commit_size <= h.data_offset;
        ok.then_some(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The word-at-a-time C string reads as the plain one: up to the first NUL, UTF-8
        /// checked, at every length and NUL position.
        #[test]
        fn a_c_string_reads_as_the_plain_loop(
            b in proptest::collection::vec(proptest::prop_oneof![
                3 => 0x20u8..0x7f,
                1 => proptest::strategy::Just(0u8),
                1 => proptest::num::u8::ANY,
            ], 0..40)
        ) {
            let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            proptest::prop_assert_eq!(c_str(&b), std::str::from_utf8(&b[..end]).ok());
        }
    }

    const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
        \tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
        \tfield:__data_loc char[] name;\toffset:40;\tsize:4;\tsigned:0;\n\
        \tfield:__rel_loc char[] rel;\toffset:44;\tsize:4;\tsigned:0;\n\n\
        print fmt: \"x\", (REC->prev_state & 0xff) ? __print_flags(REC->prev_state & 0xff, \"|\", \
        { 0x00000001, \"S\" }, { 0x00000002, \"D\" }) : \"R\", __print_symbolic(REC->x, { 7, \"SCHED\" })\n";

    #[test]
    fn a_format_file_gives_its_fields_and_tables() {
        let f = EventFormat::parse("sched", SWITCH).unwrap();
        assert_eq!(
            (f.name.as_str(), f.id, f.fields.len()),
            ("sched_switch", 372, 6)
        );
        let comm = f.field("prev_comm").unwrap();
        assert_eq!((comm.offset, comm.size, comm.loc), (8, 16, Loc::Fixed));
        assert_eq!(f.field("name").unwrap().loc, Loc::DataLoc);
        assert_eq!(f.field("rel").unwrap().loc, Loc::RelLoc);
        assert_eq!(
            f.symbols("__print_flags"),
            vec![(1, "S".to_string()), (2, "D".to_string())]
        );
        assert_eq!(
            f.symbols("__print_symbolic"),
            vec![(7, "SCHED".to_string())]
        );
    }

    #[test]
    fn fields_read_numbers_strings_and_dynamic_data() {
        let f = EventFormat::parse("sched", SWITCH).unwrap();
        let mut rec = vec![0u8; 56];
        rec[4..8].copy_from_slice(&(-5i32).to_le_bytes());
        rec[8..12].copy_from_slice(b"bash");
        rec[40..44].copy_from_slice(&((3u32 << 16) | 48).to_le_bytes());
        rec[44..48].copy_from_slice(&((2u32 << 16) | 4).to_le_bytes());
        rec[48..51].copy_from_slice(b"ab\0");
        rec[52..54].copy_from_slice(b"xy");
        let le = Endian::Little;
        assert_eq!(f.field("common_pid").unwrap().int(&rec, le), Some(-5));
        assert_eq!(f.field("prev_comm").unwrap().str(&rec, le), Some("bash"));
        assert_eq!(f.field("name").unwrap().str(&rec, le), Some("ab"));
        assert_eq!(f.field("rel").unwrap().str(&rec, le), Some("xy"));
        // A pointer past the record reads as nothing, never a panic.
        rec[40..44].copy_from_slice(&((200u32 << 16) | 48).to_le_bytes());
        assert_eq!(f.field("name").unwrap().str(&rec, le), None);
        assert_eq!(f.field("prev_state").unwrap().uint(&rec[..20], le), None);
    }

    #[test]
    fn the_page_header_of_64_and_32_bit_kernels() {
        let h64 = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
            \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
            \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
            \tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        assert_eq!(PageHeader::parse(h64), Some(PageHeader::LONG64));
        let h32 = h64
            .replace("commit;\toffset:8;\tsize:8", "commit;\toffset:8;\tsize:4")
            .replace("offset:16;\tsize:4080", "offset:12;\tsize:4084");
        let h = PageHeader::parse(&h32).unwrap();
        assert_eq!((h.commit_size, h.data_offset), (4, 12));
        assert_eq!(PageHeader::parse("field: u64 timestamp;"), None);
    }
}
