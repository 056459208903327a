//! One chunk of a JFR file, built in memory and written whole:
//!
//! ```text
//! header (68 bytes, big-endian) | events ... | checkpoint (all constant pools) | metadata
//! ```
//!
//! The header: magic `FLR\0`, version 2.1, chunk size, offsets of the checkpoint and of the
//! metadata event, start (epoch ns), duration (ns), start ticks, ticks per second, then the file
//! state (0: complete), two pad bytes and the flags (bit 0 compressed integers, bit 1 final
//! chunk). Ticks are nanoseconds of `System.nanoTime()` (the samples' own clock), so a chunk
//! converts them to wall time with one `(wall, monotonic)` pair, [`Clock`]. A chunk starts at
//! its earliest event (or when it was opened, if earlier) and lasts until its latest event end
//! (or until it was finished, if later).
//!
//! Every chunk carries its own metadata and pools, so each reads alone: a file of complete
//! chunks stays readable whatever happens after the last one was written.

use std::sync::Arc;

use super::encoding::{put_i64, put_sized, put_string, put_u64};
use super::events::{context_span_type, event_type, shape, Shape, Value};
use super::metadata::{
    builtin_types, context_type, metadata_event, Type, CHECKPOINT_EVENT, FIRST_EVENT_TYPE,
};
use super::pools::{FxMap, Pools};
use crate::core::model::ContextualSample;

pub const HEADER_SIZE: usize = 68;
pub const MAGIC: &[u8; 4] = b"FLR\0";
const TICKS_PER_SECOND: i64 = 1_000_000_000;
const FLAG_COMPRESSED_INTS: u8 = 1;
const FLAG_FINAL_CHUNK: u8 = 2;

/// Wall-clock time (ns since the epoch) at one instant of the monotonic clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    pub wall_ns: i64,
    pub mono_ns: i64,
}

impl Clock {
    pub fn epoch_ns(&self, ticks: i64) -> i64 {
        self.wall_ns
            .saturating_add(ticks.saturating_sub(self.mono_ns))
    }
}

/// The types of a file: the built-in ones and every event type seen so far (ids stay the same
/// for the file's lifetime; the metadata id changes whenever a type is added).
pub struct Types {
    builtin: Vec<Type>,
    events: Vec<Type>,
    by_name: FxMap<Arc<str>, (u64, Shape)>,
    /// Extra types: the context-span event, once declared.
    extra: Vec<Type>,
    span: Option<u64>,
    version: u64,
}

impl Default for Types {
    fn default() -> Self {
        Types::new()
    }
}

impl Types {
    pub fn new() -> Types {
        Types {
            builtin: builtin_types(),
            events: Vec::new(),
            by_name: FxMap::default(),
            extra: Vec::new(),
            span: None,
            version: 1,
        }
    }

    /// The id and shape of event type `name`, declared on first use.
    pub fn event(&mut self, name: &Arc<str>) -> (u64, Shape) {
        if let Some(&v) = self.by_name.get(name) {
            return v;
        }
        let id = self.next_id();
        self.events.push(event_type(id, name));
        self.version += 1;
        let v = (id, shape(name));
        self.by_name.insert(Arc::clone(name), v);
        v
    }

    /// The id of `jfrctx.ContextSpan`, declared on first use.
    pub fn span(&mut self) -> u64 {
        match self.span {
            Some(id) => id,
            None => {
                let id = self.declare(context_span_type);
                self.span = Some(id);
                id
            }
        }
    }

    /// Declares `make(id)` as an extra type; returns its id.
    pub fn declare(&mut self, make: impl FnOnce(u64) -> Type) -> u64 {
        let id = self.next_id();
        self.extra.push(make(id));
        self.version += 1;
        id
    }

    fn next_id(&self) -> u64 {
        FIRST_EVENT_TYPE + (self.events.len() + self.extra.len()) as u64
    }

    /// Changes whenever a type is added (readers reuse parsers across chunks of the same id).
    pub fn metadata_id(&self) -> u64 {
        self.version
    }

    pub fn all(&self) -> Vec<Type> {
        let mut v = self.builtin.clone();
        v.push(context_type());
        v.extend(self.events.iter().cloned());
        v.extend(self.extra.iter().cloned());
        v
    }
}

/// A chunk being filled.
pub struct Chunk {
    events: Vec<u8>,
    pub pools: Pools,
    opened: i64,
    start: i64,
    end: i64,
    samples: u64,
    body: Vec<u8>,
}

impl Chunk {
    /// An empty chunk opened at `opened` (monotonic ns), its constant-pool keys above `base`
    /// ([`Pools::next_base`] of the file's previous chunk, 0 for the first).
    pub fn new(opened: i64, base: u64) -> Chunk {
        Chunk {
            events: Vec::with_capacity(64 * 1024),
            pools: Pools::with_base(base),
            opened,
            start: opened,
            end: opened,
            samples: 0,
            body: Vec::with_capacity(256),
        }
    }

    /// About the size the chunk would have now (events and pools; the metadata not counted).
    pub fn approx_len(&self) -> usize {
        HEADER_SIZE + self.events.len() + self.pools.approx_len()
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Widens the chunk's time span to cover `[start, end]`.
    pub fn cover(&mut self, start: i64, end: i64) {
        self.start = self.start.min(start);
        self.end = self.end.max(end);
    }

    /// Appends one event already encoded (type id first, no size) and framed here.
    pub fn push_event(&mut self, body: &[u8]) {
        put_sized(&mut self.events, body);
    }

    /// Appends the event of sample `s`.
    pub fn add(&mut self, types: &mut Types, s: &ContextualSample) {
        let (type_id, shape) = types.event(&s.event);
        let mut body = std::mem::take(&mut self.body);
        body.clear();
        let thread = self.pools.thread(&s.thread);
        put_u64(&mut body, type_id);
        put_i64(&mut body, s.time_ns);
        if shape.duration {
            put_i64(&mut body, s.duration_ns);
        }
        put_u64(&mut body, thread);
        put_u64(&mut body, self.pools.stack(&s.frames, s.truncated));
        match shape.value {
            Value::None => {}
            Value::Bytes | Value::Period => put_i64(&mut body, s.weight),
        }
        let mut span_context = 0;
        match &s.context {
            Ok(map) => {
                let context = self.pools.context(map);
                put_u64(&mut body, context);
                put_string(&mut body, None);
                if shape.duration && s.duration_ns > 0 && thread != 0 {
                    span_context = context;
                }
            }
            Err(reason) => {
                put_u64(&mut body, 0);
                put_string(&mut body, Some(reason.as_str()));
            }
        }
        self.push_event(&body);
        if span_context != 0 {
            // The event's thread was blocked (lock, park, I/O) from its start to its end, so the
            // context the join found at the start held over the whole event. The span ends 1 ns
            // after the event: JDK 25's `jfr print` takes the spans open at an event's end, and
            // orders equal instants arbitrarily.
            body.clear();
            put_u64(&mut body, types.span());
            put_i64(&mut body, s.time_ns);
            put_i64(&mut body, s.duration_ns.saturating_add(1));
            put_u64(&mut body, thread);
            put_u64(&mut body, span_context);
            self.push_event(&body);
        }
        self.body = body;
        self.samples += 1;
        self.cover(s.time_ns, s.time_ns.saturating_add(s.duration_ns.max(0)));
    }

    /// The chunk's start (ticks): its earliest event or its opening, if earlier.
    pub fn start(&self) -> i64 {
        self.start.min(self.opened)
    }

    /// The complete chunk: header, events, checkpoint, metadata. It starts at `start` (normally
    /// [`Chunk::start`]); `now` (monotonic ns) ends the chunk's span unless an event ends later;
    /// `last` sets the final-chunk flag.
    pub fn finish(
        &self,
        types: &Types,
        clock: &Clock,
        start: i64,
        now: i64,
        last: bool,
    ) -> Vec<u8> {
        let end = self.end.max(now);
        let mut checkpoint_body = Vec::with_capacity(1024);
        put_u64(&mut checkpoint_body, CHECKPOINT_EVENT);
        put_i64(&mut checkpoint_body, start);
        put_i64(&mut checkpoint_body, 0);
        put_i64(&mut checkpoint_body, 0); // delta to the previous checkpoint: none
        checkpoint_body.push(1); // a flush checkpoint
        self.pools.write(&mut checkpoint_body);
        let metadata = metadata_event(&types.all(), start, types.metadata_id());

        let mut out = Vec::with_capacity(
            HEADER_SIZE + self.events.len() + checkpoint_body.len() + 8 + metadata.len(),
        );
        out.resize(HEADER_SIZE, 0);
        out.extend_from_slice(&self.events);
        let checkpoint_at = out.len();
        put_sized(&mut out, &checkpoint_body);
        let metadata_at = out.len();
        out.extend_from_slice(&metadata);

        let mut h = Vec::with_capacity(HEADER_SIZE);
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&2u16.to_be_bytes());
        h.extend_from_slice(&1u16.to_be_bytes());
        h.extend_from_slice(&(out.len() as i64).to_be_bytes());
        h.extend_from_slice(&(checkpoint_at as i64).to_be_bytes());
        h.extend_from_slice(&(metadata_at as i64).to_be_bytes());
        h.extend_from_slice(&clock.epoch_ns(start).to_be_bytes());
        h.extend_from_slice(&end.saturating_sub(start).to_be_bytes());
        h.extend_from_slice(&start.to_be_bytes());
        h.extend_from_slice(&TICKS_PER_SECOND.to_be_bytes());
        let flags = FLAG_COMPRESSED_INTS | if last { FLAG_FINAL_CHUNK } else { 0 };
        h.extend_from_slice(&[0, 0, 0, flags]);
        out[..HEADER_SIZE].copy_from_slice(&h);
        out
    }
}

/// The size field of the chunk header at the start of `bytes`, when it holds one.
pub fn chunk_size(bytes: &[u8]) -> Option<u64> {
    if bytes.len() < HEADER_SIZE || &bytes[..4] != MAGIC {
        return None;
    }
    Some(u64::from_be_bytes(bytes[8..16].try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::super::encoding::get_u64;
    use super::*;
    use crate::core::model::test_samples::sample;
    use crate::core::model::UnknownReason;

    fn be(b: &[u8], at: usize) -> i64 {
        i64::from_be_bytes(b[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn header_offsets_and_times() {
        let mut types = Types::new();
        let mut c = Chunk::new(1_000, 0);
        let mut s = sample(Ok(&[("k", "v")]), "main", &[("a.B.c", 1)]);
        s.time_ns = 500;
        c.add(&mut types, &s);
        let clock = Clock {
            wall_ns: 10_000,
            mono_ns: 0,
        };
        let b = c.finish(&types, &clock, c.start(), 2_000, true);
        assert_eq!(&b[..4], MAGIC);
        assert_eq!(chunk_size(&b), Some(b.len() as u64));
        let cp = be(&b, 16) as usize;
        let md = be(&b, 24) as usize;
        assert_eq!(
            be(&b, 32),
            10_500,
            "start nanos: wall time of the earliest event"
        );
        assert_eq!(be(&b, 40), 1_500, "duration");
        assert_eq!(be(&b, 48), 500, "start ticks");
        assert_eq!(be(&b, 56), 1_000_000_000);
        assert_eq!(&b[64..68], [0, 0, 0, 3]);
        // The checkpoint and the metadata are where the header says, each of its stated size.
        let mut pos = cp;
        let size = get_u64(&b, &mut pos).unwrap() as usize;
        assert_eq!(get_u64(&b, &mut pos), Some(CHECKPOINT_EVENT));
        assert_eq!(cp + size, md);
        let mut pos = md;
        let size = get_u64(&b, &mut pos).unwrap() as usize;
        assert_eq!(md + size, b.len());
    }

    #[test]
    fn one_event_field_by_field() {
        let mut types = Types::new();
        let mut c = Chunk::new(0, 0);
        let mut s = sample(Err(UnknownReason::NoThread), "t", &[("a.B.c", 7)]);
        s.time_ns = 42;
        c.add(&mut types, &s);
        let clock = Clock {
            wall_ns: 0,
            mono_ns: 0,
        };
        let b = c.finish(&types, &clock, c.start(), 0, false);
        let mut pos = HEADER_SIZE;
        let size = get_u64(&b, &mut pos).unwrap() as usize;
        assert_eq!(get_u64(&b, &mut pos), Some(FIRST_EVENT_TYPE));
        assert_eq!(get_u64(&b, &mut pos), Some(42)); // startTime
        assert_eq!(get_u64(&b, &mut pos), Some(1)); // sampledThread
        assert_eq!(get_u64(&b, &mut pos), Some(1)); // stackTrace
        assert_eq!(get_u64(&b, &mut pos), Some(0)); // context: null
        assert_eq!(b[pos], 3); // contextUnknown: UTF-8 "no_thread"
        assert_eq!(&b[pos + 2..pos + 11], b"no_thread");
        assert_eq!(pos + 11, HEADER_SIZE + size);
        assert_eq!(b[67] & FLAG_FINAL_CHUNK, 0);
    }

    #[test]
    fn blocking_events_with_a_context_get_a_span() {
        let mut types = Types::new();
        let mut c = Chunk::new(0, 0);
        let mut park = sample(Ok(&[("k", "v")]), "t", &[("a.B.c", 7)]);
        park.event = Arc::from("jdk.ThreadPark");
        park.time_ns = 100;
        park.duration_ns = 50;
        c.add(&mut types, &park);
        let mut none = park.clone();
        none.context = Ok(Arc::new(crate::core::model::ContextMap::default()));
        c.add(&mut types, &none);
        let cpu = sample(Ok(&[("k", "v")]), "t", &[("a.B.c", 7)]);
        c.add(&mut types, &cpu);
        let span = types.span();
        assert!(types
            .all()
            .iter()
            .any(|t| t.id == span && t.name == "jfrctx.ContextSpan"));
        let clock = Clock {
            wall_ns: 0,
            mono_ns: 0,
        };
        let b = c.finish(&types, &clock, c.start(), 0, false);
        // Events: park, its span, park without context (no span), the CPU sample (no span).
        let mut pos = HEADER_SIZE;
        let mut kinds = Vec::new();
        let end = i64::from_be_bytes(b[16..24].try_into().unwrap()) as usize;
        while pos < end {
            let start = pos;
            let size = get_u64(&b, &mut pos).unwrap() as usize;
            let kind = get_u64(&b, &mut pos).unwrap();
            if kind == span {
                assert_eq!(get_u64(&b, &mut pos), Some(100));
                assert_eq!(get_u64(&b, &mut pos), Some(51), "ends 1 ns after the park");
            }
            kinds.push(kind);
            pos = start + size;
        }
        assert_eq!(kinds.len(), 4);
        assert_eq!(kinds[1], span);
        assert!(!kinds[2..].contains(&span));
    }

    #[test]
    fn metadata_id_changes_with_the_types() {
        let mut types = Types::new();
        let a = types.metadata_id();
        let e: Arc<str> = Arc::from("jdk.ExecutionSample");
        assert_eq!(types.event(&e).0, FIRST_EVENT_TYPE);
        assert_eq!(types.event(&e).0, FIRST_EVENT_TYPE);
        let b = types.metadata_id();
        assert_ne!(a, b);
        assert_eq!(
            types.event(&Arc::from("jdk.ThreadPark")).0,
            FIRST_EVENT_TYPE + 1
        );
        assert_ne!(types.metadata_id(), b);
    }
}
