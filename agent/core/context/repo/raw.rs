//! A defined map in its wire form, as the facade's definition record carries it: the entry
//! count (`u16`), then for each key and each value its byte length (`u32`) and its UTF-8, keys
//! and values alternating (ARCHITECTURE.md, "Batch format", tag 5). Pure.
//!
//! The repository keeps defined maps in this form (`blocks`) and builds a [`ContextMap`] only
//! for a map a sample needs: at a server's rate most request-scoped maps are never sampled.

use crate::core::model::ContextMap;

/// A well-formed wire map: its lengths add up to exactly its bytes. Keys and values are not
/// checked here ([`RawMap::validate`] does).
#[derive(Debug, Clone, Copy)]
pub struct RawMap<'a> {
    bytes: &'a [u8],
    entries: usize,
}

impl<'a> RawMap<'a> {
    /// `bytes` as a wire map, or `None` when the lengths run past its end or leave bytes over.
    pub fn parse(bytes: &'a [u8]) -> Option<RawMap<'a>> {
        (Self::measure(bytes)? == bytes.len()).then(|| RawMap {
            bytes,
            entries: u16::from_le_bytes([bytes[0], bytes[1]]) as usize,
        })
    }

    /// How many bytes a wire map starting at `bytes` takes, or `None` when truncated.
    pub fn measure(bytes: &[u8]) -> Option<usize> {
        let entries = u16::from_le_bytes(bytes.get(..2)?.try_into().ok()?) as usize;
        let mut pos = 2usize;
        for _ in 0..2 * entries {
            let len = u32::from_le_bytes(bytes.get(pos..pos + 4)?.try_into().ok()?) as usize;
            pos = pos.checked_add(4 + len)?;
            if pos > bytes.len() {
                return None;
            }
        }
        Some(pos)
    }

    /// The bytes, as parsed.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Keys and values, alternating, as bytes.
    fn texts(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let bytes = self.bytes;
        let mut pos = 2usize;
        (0..2 * self.entries).map(move |_| {
            // In bounds: `parse` walked these lengths.
            let len =
                u32::from_le_bytes([bytes[pos], bytes[pos + 1], bytes[pos + 2], bytes[pos + 3]])
                    as usize;
            let text = &bytes[pos + 4..pos + 4 + len];
            pos += 4 + len;
            text
        })
    }

    /// Checks what the repository requires of any map ([`super::validate`]): UTF-8, keys
    /// non-empty, sorted and unique, bounded sizes.
    pub fn validate(&self) -> Result<(), String> {
        super::check_count(self.entries)?;
        let mut texts = self.texts();
        let mut previous: Option<&str> = None;
        while let (Some(key), Some(value)) = (texts.next(), texts.next()) {
            let key = std::str::from_utf8(key)
                .map_err(|_| "context key is not valid UTF-8".to_string())?;
            let value = std::str::from_utf8(value)
                .map_err(|_| format!("value of context key {key:?} is not valid UTF-8"))?;
            super::check_entry(key, value)?;
            if let Some(p) = previous.filter(|p| *p >= key) {
                return Err(format!(
                    "context keys not sorted and unique: {p:?} then {key:?}"
                ));
            }
            previous = Some(key);
        }
        Ok(())
    }

    /// The map, or `None` when a text is not UTF-8 (a map that passed `validate` always is).
    pub fn to_map(&self) -> Option<ContextMap> {
        let total = self.bytes.len() - 2 - 8 * self.entries;
        let mut text = String::with_capacity(total);
        let mut ends = Vec::with_capacity(2 * self.entries);
        for t in self.texts() {
            text.push_str(std::str::from_utf8(t).ok()?);
            ends.push(text.len() as u32);
        }
        ContextMap::from_parts(text, ends)
    }
}

/// The wire form of `entries`, as the facade's `Definitions.encode` writes it (for `batch::Encoder`,
/// tests and benchmarks).
pub fn encode(entries: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    for text in entries.iter().flat_map(|(k, v)| [k, v]) {
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_a_map() {
        let bytes = encode(&[("endpoint", "/a"), ("request", "é42")]);
        let raw = RawMap::parse(&bytes).unwrap();
        assert_eq!(raw.len(), 2);
        assert_eq!(RawMap::measure(&bytes), Some(bytes.len()));
        raw.validate().unwrap();
        let map = raw.to_map().unwrap();
        assert_eq!(
            map.iter().collect::<Vec<_>>(),
            vec![("endpoint", "/a"), ("request", "é42")]
        );
        let empty = encode(&[]);
        assert!(RawMap::parse(&empty).unwrap().to_map().unwrap().is_empty());
    }

    #[test]
    fn refuses_bad_lengths() {
        let bytes = encode(&[("k", "value")]);
        assert!(RawMap::parse(&bytes[..bytes.len() - 1]).is_none());
        assert_eq!(RawMap::measure(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(RawMap::parse(&longer).is_none(), "a byte left over");
        assert_eq!(RawMap::measure(&longer), Some(bytes.len()));
        assert!(RawMap::parse(&[1]).is_none());
        let mut huge = vec![1, 0];
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(RawMap::parse(&huge).is_none());
    }

    #[test]
    fn validate_names_the_problem() {
        let check = |e: &[(&str, &str)]| RawMap::parse(&encode(e)).unwrap().validate();
        assert!(check(&[("a", "1"), ("b", "2")]).is_ok());
        assert!(check(&[("b", "1"), ("a", "2")])
            .unwrap_err()
            .contains("not sorted"));
        assert!(check(&[("", "1")]).unwrap_err().contains("empty"));
        let mut bad = encode(&[("k", "v")]);
        *bad.last_mut().unwrap() = 0xff;
        let e = RawMap::parse(&bad).unwrap().validate().unwrap_err();
        assert!(e.contains("\"k\" is not valid UTF-8"), "{e}");
        assert!(RawMap::parse(&bad).unwrap().to_map().is_none());
    }
}
