//! The constant pools of one chunk, as the JDK writes them: symbols (pooled `java.lang.String`),
//! packages, classes, methods, stack traces (frames inline, methods by reference), threads and
//! jfrctx's contexts. Each value is written once per chunk and events refer to it by key (keys
//! start at 1; 0 is null). A chunk's pools hold only what its events use, so every chunk reads
//! alone.
//!
//! A frame arrives as `pkg.Class.method` and a line: the class is the text before the last dot,
//! written in the JVM's internal form (`pkg/Class`, as HotSpot writes class and package symbols;
//! readers turn `/` back into `.`). The method descriptor is not known to jfrctx: it is written
//! as `()`, which readers show as `Class.method()`. Nor are the frame's type and bytecode index:
//! every frame is of type `Unknown` (a standard name) and bytecode index -1.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use super::encoding::{put_bool, put_i32, put_i64, put_string, put_u64};
use super::metadata::{CLASS, CONTEXT, FRAME_TYPE, METHOD, PACKAGE, STACK_TRACE, STRING, THREAD};
use crate::core::model::{ContextMap, Frame, ThreadInfo};

/// The descriptor written for every method (see the module comment).
pub const UNKNOWN_DESCRIPTOR: &str = "()";

/// The frame type of every frame: jfrctx does not receive it. `Unknown` is one of the standard
/// names (JMC's `ParserToolkit.parseFrameType` maps it to `IMCFrame.Type.UNKNOWN`; JMC cannot
/// read a stack whose frames have no type at all).
pub const UNKNOWN_FRAME_TYPE: &str = "Unknown";

/// The entries of `c` as a JSON object, in key order (`{"k":"v"}`; strings escaped as JSON
/// requires).
pub fn context_json(c: &ContextMap) -> String {
    let mut s =
        String::with_capacity(2 + c.iter().map(|(k, v)| k.len() + v.len() + 6).sum::<usize>());
    s.push('{');
    for (i, (k, v)) in c.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&serde_json::Value::from(k).to_string());
        s.push(':');
        s.push_str(&serde_json::Value::from(v).to_string());
    }
    s.push('}');
    s
}

/// FxHash (the rustc hasher): fast for the short keys used here, not DoS-resistant (keys come
/// from the JVM, not from the network).
#[derive(Default, Clone, Copy)]
pub struct Fx(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher for Fx {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        for &b in chunks.remainder() {
            self.write_u64(u64::from(b));
        }
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(K);
    }
    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

/// Strings interned to dense keys from 1.
#[derive(Default)]
struct Interner {
    ids: FxMap<Arc<str>, u64>,
    list: Vec<Arc<str>>,
}

impl Interner {
    fn id(&mut self, s: &str) -> u64 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let s: Arc<str> = Arc::from(s);
        self.list.push(Arc::clone(&s));
        let id = self.list.len() as u64;
        self.ids.insert(s, id);
        id
    }
}

struct Stack {
    truncated: bool,
    frames: Vec<(u64, i32)>,
}

#[derive(Default)]
pub struct Pools {
    symbols: Interner,
    /// Package name symbol → key.
    packages: FxMap<u64, u64>,
    package_list: Vec<u64>,
    /// Internal class name → key; per key (name symbol, package key or 0).
    classes: FxMap<Arc<str>, u64>,
    class_list: Vec<(u64, u64)>,
    /// Method by the address of its `Arc<str>` (the decoder shares one per distinct method; the
    /// Arc kept here pins the address), then by text.
    methods_by_ptr: FxMap<usize, (Arc<str>, u64)>,
    methods: FxMap<Arc<str>, u64>,
    /// Per key (class key, name symbol).
    method_list: Vec<(u64, u64)>,
    /// Hash of a stack → the keys of the stacks with that hash.
    stacks: FxMap<u64, Vec<u64>>,
    stack_list: Vec<Stack>,
    threads: FxMap<(Option<u64>, Arc<str>, bool), u64>,
    thread_list: Vec<ThreadInfo>,
    contexts_by_ptr: FxMap<usize, (Arc<ContextMap>, u64)>,
    contexts: FxMap<Arc<ContextMap>, u64>,
    /// Per key, the context as its JSON text.
    context_list: Vec<String>,
    descriptor: u64,
    scratch: Vec<(u64, i32)>,
    /// About the bytes [`Pools::write`] would write (within a few bytes per entry).
    approx: usize,
    /// Added to every key: the JDK's parser keeps the constants it resolved in earlier chunks
    /// of a file and reuses them for the same type and key (`ConstantLookup.getPreviousResolved`),
    /// so a key must never name two different values in one file.
    base: u64,
}

impl Pools {
    pub fn new() -> Pools {
        Pools::default()
    }

    /// Pools whose keys start above `base` (the [`Pools::next_base`] of the file's previous chunk).
    pub fn with_base(base: u64) -> Pools {
        Pools {
            base,
            ..Pools::default()
        }
    }

    /// The base for the next chunk's pools: above every key of this one.
    pub fn next_base(&self) -> u64 {
        let most = [
            self.symbols.list.len(),
            self.package_list.len(),
            self.class_list.len(),
            self.method_list.len(),
            self.stack_list.len(),
            self.thread_list.len(),
            self.context_list.len(),
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        self.base + most as u64
    }

    /// A local key (from 1) as written; 0 stays null.
    fn key(&self, local: u64) -> u64 {
        if local == 0 {
            0
        } else {
            self.base + local
        }
    }

    /// About the size of the pools written now.
    pub fn approx_len(&self) -> usize {
        self.approx
    }

    pub fn is_empty(&self) -> bool {
        self.symbols.list.is_empty() && self.thread_list.is_empty() && self.context_list.is_empty()
    }

    fn method(&mut self, m: &Arc<str>) -> u64 {
        let ptr = Arc::as_ptr(m) as *const u8 as usize;
        if let Some((_, id)) = self.methods_by_ptr.get(&ptr) {
            return *id;
        }
        let id = match self.methods.get(&**m) {
            Some(&id) => id,
            None => {
                let (class, name) = match m.rfind('.') {
                    Some(i) => (&m[..i], &m[i + 1..]),
                    None => ("", &m[..]),
                };
                let class = self.class(class);
                let name_len = name.len();
                let name = self.symbols.id(name);
                if self.descriptor == 0 {
                    self.descriptor = self.symbols.id(UNKNOWN_DESCRIPTOR);
                }
                self.method_list.push((class, name));
                self.approx += 8 + name_len;
                let id = self.method_list.len() as u64;
                self.methods.insert(Arc::clone(m), id);
                id
            }
        };
        self.methods_by_ptr.insert(ptr, (Arc::clone(m), id));
        id
    }

    fn class(&mut self, dotted: &str) -> u64 {
        let internal: String = dotted.replace('.', "/");
        if let Some(&id) = self.classes.get(internal.as_str()) {
            return id;
        }
        let package = match internal.rfind('/') {
            Some(i) => {
                let name = self.symbols.id(&internal[..i]);
                let next = self.package_list.len() as u64 + 1;
                let id = *self.packages.entry(name).or_insert(next);
                if id == next {
                    self.package_list.push(name);
                }
                id
            }
            None => 0,
        };
        let name = self.symbols.id(&internal);
        self.approx += 2 * internal.len() + 12;
        self.class_list.push((name, package));
        let id = self.class_list.len() as u64;
        self.classes.insert(Arc::from(internal), id);
        id
    }

    /// The key of the stack `frames` (leaf first); 0 for an empty stack.
    pub fn stack(&mut self, frames: &[Frame], truncated: bool) -> u64 {
        if frames.is_empty() {
            return 0;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let mut h = Fx::default();
        h.write_u64(u64::from(truncated));
        for f in frames {
            let m = self.method(&f.method);
            scratch.push((m, f.line));
            h.write_u64(m);
            h.write_u64(u64::from(f.line as u32));
        }
        let hash = h.finish();
        let list = &self.stack_list;
        let found = self.stacks.get(&hash).and_then(|ids| {
            ids.iter().copied().find(|&id| {
                let s = &list[id as usize - 1];
                s.truncated == truncated && s.frames == scratch
            })
        });
        let id = match found {
            Some(id) => id,
            None => {
                self.approx += 4 + 10 * scratch.len();
                self.stack_list.push(Stack {
                    truncated,
                    frames: scratch.clone(),
                });
                let id = self.stack_list.len() as u64;
                self.stacks.entry(hash).or_default().push(id);
                id
            }
        };
        self.scratch = scratch;
        self.key(id)
    }

    /// The key of thread `t`; 0 when JFR gave no thread.
    pub fn thread(&mut self, t: &ThreadInfo) -> u64 {
        if t.id.is_none() {
            return 0;
        }
        let key = (t.id, Arc::clone(&t.name), t.is_virtual);
        if let Some(&id) = self.threads.get(&key) {
            return self.key(id);
        }
        self.approx += 16 + t.name.len();
        self.thread_list.push(t.clone());
        let id = self.thread_list.len() as u64;
        self.threads.insert(key, id);
        self.key(id)
    }

    /// The key of context `c`; 0 (null) for the empty context.
    pub fn context(&mut self, c: &Arc<ContextMap>) -> u64 {
        if c.is_empty() {
            return 0;
        }
        let ptr = Arc::as_ptr(c) as usize;
        if let Some((_, id)) = self.contexts_by_ptr.get(&ptr) {
            return self.key(*id);
        }
        let id = match self.contexts.get(c) {
            Some(&id) => id,
            None => {
                let json = context_json(c);
                self.approx += 4 + json.len();
                self.context_list.push(json);
                let id = self.context_list.len() as u64;
                self.contexts.insert(Arc::clone(c), id);
                id
            }
        };
        self.contexts_by_ptr.insert(ptr, (Arc::clone(c), id));
        self.key(id)
    }

    /// Appends the pools (number of non-empty pools, then each: type id, count, entries) as the
    /// body of a checkpoint event after its header fields.
    pub fn write(&self, out: &mut Vec<u8>) {
        let sizes = [
            self.symbols.list.len(),
            self.package_list.len(),
            self.class_list.len(),
            self.method_list.len(),
            self.stack_list.len(),
            self.thread_list.len(),
            self.context_list.len(),
        ];
        let frame_types = usize::from(!self.stack_list.is_empty());
        put_u64(
            out,
            (sizes.iter().filter(|&&n| n > 0).count() + frame_types) as u64,
        );
        let head = |out: &mut Vec<u8>, type_id: u64, n: usize| {
            put_u64(out, type_id);
            put_u64(out, n as u64);
        };
        if !self.symbols.list.is_empty() {
            head(out, STRING, self.symbols.list.len());
            for (i, s) in self.symbols.list.iter().enumerate() {
                put_u64(out, self.key(i as u64 + 1));
                put_string(out, Some(s));
            }
        }
        if !self.package_list.is_empty() {
            head(out, PACKAGE, self.package_list.len());
            for (i, name) in self.package_list.iter().enumerate() {
                put_u64(out, self.key(i as u64 + 1));
                put_u64(out, self.key(*name));
            }
        }
        if !self.class_list.is_empty() {
            head(out, CLASS, self.class_list.len());
            for (i, (name, package)) in self.class_list.iter().enumerate() {
                put_u64(out, self.key(i as u64 + 1));
                put_u64(out, self.key(*name));
                put_u64(out, self.key(*package));
            }
        }
        if !self.method_list.is_empty() {
            head(out, METHOD, self.method_list.len());
            for (i, (class, name)) in self.method_list.iter().enumerate() {
                put_u64(out, self.key(i as u64 + 1));
                put_u64(out, self.key(*class));
                put_u64(out, self.key(*name));
                put_u64(out, self.key(self.descriptor));
            }
        }
        if frame_types > 0 {
            head(out, FRAME_TYPE, 1);
            put_u64(out, 1);
            put_string(out, Some(UNKNOWN_FRAME_TYPE));
        }
        if !self.stack_list.is_empty() {
            head(out, STACK_TRACE, self.stack_list.len());
            for (i, s) in self.stack_list.iter().enumerate() {
                put_u64(out, self.key(i as u64 + 1));
                put_bool(out, s.truncated);
                put_u64(out, s.frames.len() as u64);
                for &(method, line) in &s.frames {
                    put_u64(out, self.key(method));
                    put_i32(out, line);
                    put_i32(out, -1); // bytecodeIndex: not known
                    put_u64(out, 1); // type: the one entry, Unknown (the same in every chunk)
                }
            }
        }
        if !self.thread_list.is_empty() {
            head(out, THREAD, self.thread_list.len());
            for (i, t) in self.thread_list.iter().enumerate() {
                put_u64(out, self.key(i as u64 + 1));
                put_string(out, Some(&t.name));
                put_i64(out, t.id.unwrap_or(0) as i64);
                put_bool(out, t.is_virtual);
            }
        }
        if !self.context_list.is_empty() {
            head(out, CONTEXT, self.context_list.len());
            for (i, c) in self.context_list.iter().enumerate() {
                put_u64(out, self.key(i as u64 + 1));
                put_string(out, Some(c));
            }
        }
    }

    /// Distinct stacks, methods and contexts so far (for tests and sizing).
    pub fn counts(&self) -> (usize, usize, usize) {
        (
            self.stack_list.len(),
            self.method_list.len(),
            self.context_list.len(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::encoding::get_u64;
    use super::*;

    fn frames(v: &[(&str, i32)]) -> Vec<Frame> {
        v.iter()
            .map(|(m, l)| Frame {
                method: Arc::from(*m),
                line: *l,
            })
            .collect()
    }

    fn ctx(kv: &[(&str, &str)]) -> Arc<ContextMap> {
        Arc::new(ContextMap::from_pairs(kv))
    }

    #[test]
    fn stacks_methods_and_classes_are_shared() {
        let mut p = Pools::new();
        let a = frames(&[("a.b.C.run", 3), ("a.b.C.main", 9)]);
        let b = frames(&[("a.b.C.run", 4), ("a.b.C.main", 9)]);
        let s1 = p.stack(&a, false);
        assert_eq!(p.stack(&a.clone(), false), s1);
        assert_ne!(p.stack(&a, true), s1);
        assert_ne!(p.stack(&b, false), s1);
        assert_eq!(p.stack(&[], false), 0);
        let (stacks, methods, _) = p.counts();
        assert_eq!((stacks, methods), (3, 2));
        assert_eq!(p.class_list.len(), 1);
        assert_eq!(p.package_list.len(), 1);
        let names: Vec<&str> = p.symbols.list.iter().map(|s| &**s).collect();
        assert_eq!(names, ["a/b", "a/b/C", "run", "()", "main"]);
    }

    #[test]
    fn a_class_without_package_has_none() {
        let mut p = Pools::new();
        p.stack(&frames(&[("Main.main", 1)]), false);
        assert_eq!(p.class_list, [(1, 0)]);
    }

    #[test]
    fn contexts_by_value_and_empty_is_null() {
        let mut p = Pools::new();
        let c = ctx(&[("k", "v")]);
        assert_eq!(p.context(&c), 1);
        assert_eq!(p.context(&c), 1);
        assert_eq!(p.context(&ctx(&[("k", "v")])), 1);
        assert_eq!(p.context(&ctx(&[("k", "w")])), 2);
        assert_eq!(p.context(&ctx(&[])), 0);
        assert_eq!(p.context_list, [r#"{"k":"v"}"#, r#"{"k":"w"}"#]);
    }

    #[test]
    fn context_json_escapes() {
        let c = ctx(&[("a\"b", "x\ny"), ("z", "é")]);
        let text = context_json(&c);
        assert_eq!(text, r#"{"a\"b":"x\ny","z":"é"}"#);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["a\"b"], "x\ny");
    }

    #[test]
    fn threads_without_id_are_null() {
        let mut p = Pools::new();
        let t = ThreadInfo {
            id: None,
            name: Arc::from(""),
            is_virtual: false,
        };
        assert_eq!(p.thread(&t), 0);
        let t = ThreadInfo { id: Some(5), ..t };
        assert_eq!(p.thread(&t), 1);
        assert_eq!(p.thread(&t.clone()), 1);
    }

    #[test]
    fn keys_never_repeat_across_chunks() {
        let mut a = Pools::new();
        let c1 = a.context(&ctx(&[("k", "v")]));
        let s1 = a.stack(&frames(&[("a.B.c", 1)]), false);
        let mut b = Pools::with_base(a.next_base());
        let c2 = b.context(&ctx(&[("k", "w")]));
        let s2 = b.stack(&frames(&[("a.B.d", 1)]), false);
        assert!(c2 > c1 && s2 > s1, "{c1} {c2} {s1} {s2}");
        assert!(c2 > a.next_base() - 1);
        assert_eq!(b.context(&ctx(&[])), 0, "null stays 0");
    }

    #[test]
    fn only_non_empty_pools_are_written() {
        let mut p = Pools::new();
        let mut out = Vec::new();
        p.write(&mut out);
        assert_eq!(out, [0]);
        p.context(&ctx(&[("k", "v")]));
        let mut out = Vec::new();
        p.write(&mut out);
        let mut pos = 0;
        let mut next = || get_u64(&out, &mut pos).unwrap();
        assert_eq!(next(), 1); // one pool
        assert_eq!(next(), CONTEXT);
        assert_eq!(next(), 1); // one entry
        assert_eq!(next(), 1); // key
        assert_eq!(out[4], 3, "UTF-8 string");
        assert_eq!(&out[6..], br#"{"k":"v"}"#);
    }
}
