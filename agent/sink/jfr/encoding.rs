//! The primitive encodings of the JFR file format (version 2): compressed integers, strings and
//! size-prefixed records.
//!
//! Integers inside events, the metadata and checkpoints are compressed: 7 bits per byte, least
//! significant group first, the high bit set when more bytes follow; the ninth byte, when
//! reached, carries the last 8 bits whole (`RecordingInput.readLong` of the JDK's parser). An
//! `int` is written as its unsigned 32-bit pattern (so -1 takes 5 bytes), a `long` as its
//! unsigned 64-bit pattern. Strings start with an encoding byte: 0 null, 1 empty, 3 UTF-8 bytes
//! (length, then the bytes). The chunk header alone uses fixed-size big-endian integers.

/// String encodings (the first byte of a string).
pub const STRING_NULL: u8 = 0;
pub const STRING_EMPTY: u8 = 1;
pub const STRING_UTF8: u8 = 3;

/// Appends `v` as a compressed integer (1 to 9 bytes).
#[inline]
pub fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    for _ in 0..8 {
        if v < 0x80 {
            out.push(v as u8);
            return;
        }
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A Java `long`.
#[inline]
pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    put_u64(out, v as u64);
}

/// A Java `int`: its 32-bit pattern, so that the reader's `(int) readLong()` gives `v` back.
#[inline]
pub fn put_i32(out: &mut Vec<u8>, v: i32) {
    put_u64(out, u64::from(v as u32));
}

#[inline]
pub fn put_bool(out: &mut Vec<u8>, v: bool) {
    out.push(u8::from(v));
}

/// The number of bytes [`put_u64`] takes for `v`.
pub fn u64_len(v: u64) -> usize {
    let mut n = 1;
    let mut v = v;
    while v >= 0x80 && n < 9 {
        v >>= 7;
        n += 1;
    }
    n
}

/// A `java.lang.String` value written inline: null, empty or UTF-8.
pub fn put_string(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.push(STRING_NULL),
        Some("") => out.push(STRING_EMPTY),
        Some(s) => {
            out.push(STRING_UTF8);
            put_u64(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
    }
}

/// Appends `body` as a record whose first field is its total size, that size included (every
/// event, the metadata and checkpoints are framed so).
pub fn put_sized(out: &mut Vec<u8>, body: &[u8]) {
    put_u64(out, sized_len(body.len()) as u64);
    out.extend_from_slice(body);
}

/// The total size of a record of `body` bytes framed by [`put_sized`].
pub fn sized_len(body: usize) -> usize {
    let mut total = body + 1;
    while u64_len(total as u64) + body != total {
        total = body + u64_len(total as u64);
    }
    total
}

/// Reads what [`put_u64`] wrote at `*pos` (used by tests and by the file bound's chunk scan).
pub fn get_u64(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for i in 0..8 {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some(v);
        }
    }
    let b = *buf.get(*pos)?;
    *pos += 1;
    Some(v | (u64::from(b) << 56))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_u64(&mut out, v);
        out
    }

    #[test]
    fn small_values_take_one_byte() {
        assert_eq!(enc(0), [0]);
        assert_eq!(enc(127), [127]);
        assert_eq!(enc(128), [0x80, 0x01]);
        assert_eq!(enc(300), [0xac, 0x02]);
    }

    #[test]
    fn the_ninth_byte_carries_eight_bits() {
        assert_eq!(enc(u64::MAX).len(), 9);
        assert_eq!(enc(u64::MAX)[8], 0xff);
        assert_eq!(enc(1 << 56).len(), 9);
        assert_eq!(enc((1 << 56) - 1).len(), 8);
    }

    #[test]
    fn round_trip_and_lengths() {
        let mut values = vec![0u64, 1, 127, 128, 16_383, 16_384, u64::MAX, 1 << 63];
        values.extend((0..64).map(|b| 1u64 << b));
        values.extend((0..64).map(|b| (1u64 << b) - 1));
        for v in values {
            let e = enc(v);
            assert_eq!(e.len(), u64_len(v), "{v}");
            let mut pos = 0;
            assert_eq!(get_u64(&e, &mut pos), Some(v));
            assert_eq!(pos, e.len());
        }
    }

    #[test]
    fn ints_are_their_32_bit_pattern() {
        let mut out = Vec::new();
        put_i32(&mut out, -1);
        assert_eq!(out, [0xff, 0xff, 0xff, 0xff, 0x0f]);
        let mut pos = 0;
        assert_eq!(get_u64(&out, &mut pos).map(|v| v as i32), Some(-1));
        let mut out = Vec::new();
        put_i64(&mut out, -1);
        assert_eq!(out.len(), 9);
    }

    #[test]
    fn strings() {
        let mut out = Vec::new();
        put_string(&mut out, None);
        put_string(&mut out, Some(""));
        put_string(&mut out, Some("ké"));
        assert_eq!(out, [0, 1, 3, 3, b'k', 0xc3, 0xa9]);
    }

    #[test]
    fn sized_records_count_their_own_size() {
        for body in [
            0usize,
            1,
            125,
            126,
            127,
            128,
            16_380,
            16_381,
            16_382,
            16_383,
            1 << 20,
        ] {
            let total = sized_len(body);
            assert_eq!(total, body + u64_len(total as u64), "body {body}");
            let mut out = Vec::new();
            put_sized(&mut out, &vec![7u8; body]);
            assert_eq!(out.len(), total);
            let mut pos = 0;
            assert_eq!(get_u64(&out, &mut pos), Some(total as u64));
        }
    }
}
