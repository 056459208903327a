//! The metadata event: every type a chunk uses, with its fields and annotations, as the element
//! tree the JDK's `MetadataReader` (and JMC's parser) read: `root` → `metadata` → `class`
//! elements (attributes `id`, `name`, `superType`, `simpleType`) holding `field` elements
//! (`name`, `class` = the field's type id, `constantPool`, `dimension`) and `annotation` elements
//! (`class` = the annotation type's id, then its values), and `root` → `region` (time zone).
//! Element names, attribute names and values all go through one string table written first.
//!
//! Symbols (class, package and method names) are constant-pool references to
//! `java.lang.String` values, as HotSpot writes them.
//!
//! The types are the JDK's own (`java.lang.Thread`, `jdk.types.StackTrace`, ...), written with
//! the fields jfrctx knows; the JDK's API gives a default for an absent field, so nothing is
//! invented. A stack frame keeps all four of the JDK's fields, because JMC's parser (9.1) reads
//! `jdk.types.StackFrame` with a fixed layout of `method`, `lineNumber`, `bytecodeIndex` and
//! `type` (and fails on a frame without a type): jfrctx does not receive the last two, and writes
//! -1 (what `RecordedFrame.getBytecodeIndex()` gives when there is none) and the standard frame
//! type `Unknown`. Added:
//! `jfrctx.Context { entries: jfrctx.ContextEntry[] }` and `jfrctx.ContextEntry { key, value }`.

use std::collections::HashMap;

use super::encoding::{put_i64, put_sized, put_string, put_u64};

/// Type id of the metadata event and of checkpoint events (fixed by the format).
pub const METADATA_EVENT: u64 = 0;
pub const CHECKPOINT_EVENT: u64 = 1;

// Type ids of the built-in types (any ids ≥ 2 would do: readers resolve types by name).
pub const BOOLEAN: u64 = 10;
pub const INT: u64 = 11;
pub const LONG: u64 = 12;
pub const STRING: u64 = 13;
pub const THREAD: u64 = 20;
pub const STACK_TRACE: u64 = 21;
pub const STACK_FRAME: u64 = 22;
pub const METHOD: u64 = 23;
pub const CLASS: u64 = 24;
pub const PACKAGE: u64 = 25;
pub const FRAME_TYPE: u64 = 27;
pub const CONTEXT: u64 = 30;
pub const LABEL: u64 = 40;
pub const DESCRIPTION: u64 = 41;
pub const CATEGORY: u64 = 42;
pub const TIMESTAMP: u64 = 43;
pub const TIMESPAN: u64 = 44;
pub const DATA_AMOUNT: u64 = 45;
pub const CONTEXTUAL: u64 = 46;
/// Event types get ids from here on, in the order they are first seen.
pub const FIRST_EVENT_TYPE: u64 = 100;

/// One annotation on a type or field: its type and `(attribute, value)` pairs (`value`, or
/// `value-0`, `value-1`, ... for an array).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    pub type_id: u64,
    pub values: Vec<(String, String)>,
}

impl Annotation {
    pub fn new(type_id: u64, value: &str) -> Annotation {
        Annotation {
            type_id,
            values: vec![("value".into(), value.into())],
        }
    }
    pub fn array(type_id: u64, values: &[&str]) -> Annotation {
        Annotation {
            type_id,
            values: values
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("value-{i}"), v.to_string()))
                .collect(),
        }
    }
    pub fn marker(type_id: u64) -> Annotation {
        Annotation {
            type_id,
            values: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub type_id: u64,
    /// A one-dimensional array of `type_id`.
    pub array: bool,
    /// The value is a constant-pool key.
    pub pool: bool,
    pub annotations: Vec<Annotation>,
}

impl Field {
    pub fn new(name: &str, type_id: u64) -> Field {
        Field {
            name: name.into(),
            type_id,
            array: false,
            pool: false,
            annotations: Vec::new(),
        }
    }
    /// A constant-pool reference.
    pub fn pooled(name: &str, type_id: u64) -> Field {
        Field {
            pool: true,
            ..Field::new(name, type_id)
        }
    }
    pub fn label(mut self, label: &str) -> Field {
        self.annotations.push(Annotation::new(LABEL, label));
        self
    }
    pub fn with(mut self, a: Annotation) -> Field {
        self.annotations.push(a);
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Type {
    pub id: u64,
    pub name: String,
    pub super_type: Option<&'static str>,
    /// A type of one field that readers show as that field's value (`simpleType="true"`).
    pub simple: bool,
    pub fields: Vec<Field>,
    pub annotations: Vec<Annotation>,
}

impl Type {
    fn new(id: u64, name: &str, super_type: Option<&'static str>, fields: Vec<Field>) -> Type {
        Type {
            id,
            name: name.into(),
            super_type,
            simple: false,
            fields,
            annotations: Vec::new(),
        }
    }
}

const ANNOTATION: Option<&str> = Some("java.lang.annotation.Annotation");
pub const EVENT: Option<&str> = Some("jdk.jfr.Event");

/// The types every chunk declares: primitives, the JDK's pooled types and the annotation types
/// used (jfrctx's `jfrctx.Context` comes from [`context_type`]).
pub fn builtin_types() -> Vec<Type> {
    let value = |t| vec![Field::new("value", t)];
    let mut types = vec![
        Type::new(BOOLEAN, "boolean", None, vec![]),
        Type::new(INT, "int", None, vec![]),
        Type::new(LONG, "long", None, vec![]),
        Type::new(STRING, "java.lang.String", None, vec![]),
        Type::new(LABEL, "jdk.jfr.Label", ANNOTATION, value(STRING)),
        Type::new(
            DESCRIPTION,
            "jdk.jfr.Description",
            ANNOTATION,
            value(STRING),
        ),
        Type::new(
            CATEGORY,
            "jdk.jfr.Category",
            ANNOTATION,
            vec![Field {
                array: true,
                ..Field::new("value", STRING)
            }],
        ),
        Type::new(TIMESTAMP, "jdk.jfr.Timestamp", ANNOTATION, value(STRING)),
        Type::new(TIMESPAN, "jdk.jfr.Timespan", ANNOTATION, value(STRING)),
        Type::new(DATA_AMOUNT, "jdk.jfr.DataAmount", ANNOTATION, value(STRING)),
        Type::new(CONTEXTUAL, "jdk.jfr.Contextual", ANNOTATION, vec![]),
        Type::new(
            THREAD,
            "java.lang.Thread",
            None,
            vec![
                Field::new("javaName", STRING).label("Java Thread Name"),
                Field::new("javaThreadId", LONG).label("Java Thread Id"),
                Field::new("isVirtual", BOOLEAN).label("Virtual Thread"),
            ],
        ),
        Type::new(
            STACK_TRACE,
            "jdk.types.StackTrace",
            None,
            vec![
                Field::new("truncated", BOOLEAN).label("Truncated"),
                Field {
                    array: true,
                    ..Field::new("frames", STACK_FRAME).label("Stack Frames")
                },
            ],
        ),
        Type::new(
            STACK_FRAME,
            "jdk.types.StackFrame",
            None,
            vec![
                Field::pooled("method", METHOD).label("Java Method"),
                Field::new("lineNumber", INT).label("Line Number"),
                Field::new("bytecodeIndex", INT).label("Bytecode Index"),
                Field::pooled("type", FRAME_TYPE).label("Frame Type"),
            ],
        ),
        Type::new(
            FRAME_TYPE,
            "jdk.types.FrameType",
            None,
            vec![Field::new("description", STRING).label("Description")],
        ),
        Type::new(
            METHOD,
            "jdk.types.Method",
            None,
            vec![
                Field::pooled("type", CLASS).label("Type"),
                Field::pooled("name", STRING).label("Name"),
                Field::pooled("descriptor", STRING).label("Descriptor"),
            ],
        ),
        Type::new(
            CLASS,
            "java.lang.Class",
            None,
            vec![
                Field::pooled("name", STRING).label("Name"),
                Field::pooled("package", PACKAGE).label("Package"),
            ],
        ),
        Type::new(
            PACKAGE,
            "jdk.types.Package",
            None,
            vec![Field::pooled("name", STRING).label("Name")],
        ),
    ];
    for t in &mut types {
        let label = match t.id {
            THREAD => "Thread",
            STACK_TRACE => "Stacktrace",
            STACK_FRAME => "Frame",
            METHOD => "Java Method",
            CLASS => "Java Class",
            PACKAGE => "Package",
            FRAME_TYPE => "Frame type",
            _ => continue,
        };
        t.annotations.push(Annotation::new(LABEL, label));
        // The JDK's frame type is a simple type: readers see the description string itself.
        t.simple = t.id == FRAME_TYPE;
    }
    types
}

/// `jfrctx.Context`: a simple type (readers show its one field's value) whose field `json` is
/// the context's entries as a JSON object, keys sorted: `{"endpoint":"/orders","tenant":"a"}`.
///
/// Why not a struct of key/value entries: `jfr print` of JDK 17, 21 and 25 fails on any array
/// of structs other than stack frames (`PrettyWriter.printValue` is called without a field for
/// array elements), and JMC 9.1 gives a custom struct a new content type in every chunk, so
/// that an event type with a field of such a struct becomes a new event type per chunk
/// (`jdk.ExecutionSample` + a UUID, `RepositoryBuilder.isCompatibleWith`). A simple type of one
/// `String` reads the same in every chunk and in every reader, and the JSON text keeps any key
/// and value exactly.
pub fn context_type() -> Type {
    let mut t = Type::new(
        CONTEXT,
        "jfrctx.Context",
        None,
        vec![Field::new("json", STRING).label("Entries (JSON)")],
    );
    t.simple = true;
    t.annotations
        .push(Annotation::new(LABEL, "Recording Context"));
    t
}

/// An element of the metadata tree.
struct Element {
    name: &'static str,
    attributes: Vec<(String, String)>,
    children: Vec<Element>,
}

impl Element {
    fn new(name: &'static str) -> Element {
        Element {
            name,
            attributes: Vec::new(),
            children: Vec::new(),
        }
    }
    fn attr(mut self, k: &str, v: impl ToString) -> Element {
        self.attributes.push((k.into(), v.to_string()));
        self
    }
}

fn annotation_element(a: &Annotation) -> Element {
    let mut e = Element::new("annotation").attr("class", a.type_id);
    e.attributes.extend(a.values.iter().cloned());
    e
}

fn type_element(t: &Type) -> Element {
    let mut e = Element::new("class").attr("name", &t.name).attr("id", t.id);
    if let Some(s) = t.super_type {
        e = e.attr("superType", s);
    }
    if t.simple {
        e = e.attr("simpleType", "true");
    }
    e.children
        .extend(t.annotations.iter().map(annotation_element));
    for f in &t.fields {
        let mut fe = Element::new("field")
            .attr("name", &f.name)
            .attr("class", f.type_id);
        if f.pool {
            fe = fe.attr("constantPool", "true");
        }
        if f.array {
            fe = fe.attr("dimension", 1);
        }
        fe.children
            .extend(f.annotations.iter().map(annotation_element));
        e.children.push(fe);
    }
    e
}

/// Assigns string-table indexes in first-use order.
#[derive(Default)]
struct Strings {
    index: HashMap<String, u64>,
    list: Vec<String>,
}

impl Strings {
    fn id(&mut self, s: &str) -> u64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as u64;
        self.index.insert(s.to_string(), i);
        self.list.push(s.to_string());
        i
    }
    fn collect(&mut self, e: &Element) {
        self.id(e.name);
        for (k, v) in &e.attributes {
            self.id(k);
            self.id(v);
        }
        for c in &e.children {
            self.collect(c);
        }
    }
}

fn put_element(out: &mut Vec<u8>, strings: &mut Strings, e: &Element) {
    put_u64(out, strings.id(e.name));
    put_u64(out, e.attributes.len() as u64);
    for (k, v) in &e.attributes {
        put_u64(out, strings.id(k));
        put_u64(out, strings.id(v));
    }
    put_u64(out, e.children.len() as u64);
    for c in &e.children {
        put_element(out, strings, c);
    }
}

/// The whole metadata event (size-framed) declaring `types`, stamped `start_ticks`, with
/// `metadata_id` (readers reuse a previous chunk's parsers when the id is the same, so the id
/// must change whenever the types do).
pub fn metadata_event(types: &[Type], start_ticks: i64, metadata_id: u64) -> Vec<u8> {
    let mut metadata = Element::new("metadata");
    metadata.children.extend(types.iter().map(type_element));
    let region = Element::new("region")
        .attr("locale", "en_US")
        .attr("gmtOffset", 0);
    let mut root = Element::new("root");
    root.children.push(metadata);
    root.children.push(region);

    let mut strings = Strings::default();
    strings.collect(&root);
    let mut body = Vec::with_capacity(16 * 1024);
    put_u64(&mut body, METADATA_EVENT);
    put_i64(&mut body, start_ticks);
    put_i64(&mut body, 0);
    put_u64(&mut body, metadata_id);
    put_u64(&mut body, strings.list.len() as u64);
    for s in &strings.list {
        put_string(&mut body, Some(s));
    }
    put_element(&mut body, &mut strings, &root);
    let mut out = Vec::with_capacity(body.len() + 5);
    put_sized(&mut out, &body);
    out
}

#[cfg(test)]
mod tests {
    use super::super::encoding::get_u64;
    use super::*;

    /// Reads a string written by `put_string` (UTF-8 or empty only).
    fn get_string(buf: &[u8], pos: &mut usize) -> String {
        let enc = buf[*pos];
        *pos += 1;
        match enc {
            1 => String::new(),
            3 => {
                let n = get_u64(buf, pos).unwrap() as usize;
                let s = String::from_utf8(buf[*pos..*pos + n].to_vec()).unwrap();
                *pos += n;
                s
            }
            e => panic!("encoding {e}"),
        }
    }

    struct Parsed {
        name: String,
        attrs: Vec<(String, String)>,
        children: Vec<Parsed>,
    }

    fn parse(buf: &[u8], pos: &mut usize, table: &[String]) -> Parsed {
        let mut next = || get_u64(buf, pos).unwrap() as usize;
        let name = table[next()].clone();
        let n = next();
        let mut attrs = Vec::new();
        for _ in 0..n {
            let k = table[get_u64(buf, pos).unwrap() as usize].clone();
            let v = table[get_u64(buf, pos).unwrap() as usize].clone();
            attrs.push((k, v));
        }
        let c = get_u64(buf, pos).unwrap() as usize;
        let children = (0..c).map(|_| parse(buf, pos, table)).collect();
        Parsed {
            name,
            attrs,
            children,
        }
    }

    #[test]
    fn the_tree_reads_back_as_the_jdk_reader_expects() {
        let mut types = builtin_types();
        types.push(context_type());
        let ev = metadata_event(&types, 123, 7);
        let mut pos = 0;
        let size = get_u64(&ev, &mut pos).unwrap() as usize;
        assert_eq!(size, ev.len());
        assert_eq!(get_u64(&ev, &mut pos), Some(METADATA_EVENT));
        assert_eq!(get_u64(&ev, &mut pos), Some(123));
        assert_eq!(get_u64(&ev, &mut pos), Some(0));
        assert_eq!(get_u64(&ev, &mut pos), Some(7));
        let n = get_u64(&ev, &mut pos).unwrap() as usize;
        let table: Vec<String> = (0..n).map(|_| get_string(&ev, &mut pos)).collect();
        let root = parse(&ev, &mut pos, &table);
        assert_eq!(pos, ev.len());
        assert_eq!(root.name, "root");
        assert_eq!(root.children[0].name, "metadata");
        assert_eq!(root.children[1].name, "region");
        let classes = &root.children[0].children;
        assert_eq!(classes.len(), types.len());
        let ctx = classes
            .iter()
            .find(|c| c.attrs.contains(&("name".into(), "jfrctx.Context".into())))
            .unwrap();
        assert!(ctx.attrs.contains(&("simpleType".into(), "true".into())));
        let fields: Vec<&str> = ctx
            .children
            .iter()
            .filter(|c| c.name == "field")
            .map(|c| c.attrs[0].1.as_str())
            .collect();
        assert_eq!(fields, ["json"]);
        let frame = classes
            .iter()
            .find(|c| {
                c.attrs
                    .contains(&("name".into(), "jdk.types.StackFrame".into()))
            })
            .unwrap();
        let method = &frame.children.iter().find(|c| c.name == "field").unwrap();
        assert!(method
            .attrs
            .contains(&("constantPool".into(), "true".into())));
    }

    #[test]
    fn every_referenced_type_is_declared() {
        let types = builtin_types();
        let ids: Vec<u64> = types.iter().map(|t| t.id).collect();
        for t in &types {
            for f in &t.fields {
                assert!(ids.contains(&f.type_id), "{}.{}", t.name, f.name);
                for a in &f.annotations {
                    assert!(ids.contains(&a.type_id));
                }
            }
        }
    }
}
