//! `RecordingContextFilter` semantics (pure): which contextualised samples reach the sinks.
//!
//! A filter is a set of rules, one per event type plus an optional one for all types (`*`). The
//! rule for a sample's event type, when there is one, decides; otherwise the `*` rule decides;
//! with neither, the sample passes. A rule is a conjunction of predicates (all must hold); a rule
//! without predicates (`any`) lets every sample of its types pass.
//!
//! Text form (the `filter=` agent option and what the facade hands to `Natives.setFilter`):
//!
//! ```text
//! filter := rule (';' rule)*                  empty: no filter, everything passes
//! rule   := TYPE ':' pred ('+' pred)*         TYPE is '*' or an event type name
//! pred   := 'any' | 'has_context' | 'has_no_context' | 'has_key(' KEY ')'
//!         | 'has_entry(' KEY '=' VALUE ')'
//! ```
//!
//! `KEY` and `VALUE` are percent-encoded: `%XX` stands for the byte `0xXX` of their UTF-8 form,
//! and the characters `%` `;` `+` `(` `)` `=` `,` `:` and white space must be written that way.
//! Each type may have one rule; `any` stands alone.
//!
//! Samples whose context is unknown satisfy none of `has_context`, `has_no_context`, `has_key`,
//! `has_entry`: they pass only where no rule applies or the rule is `any`.

use std::fmt;

use crate::core::model::ContextualSample;

/// One predicate of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pred {
    /// The context is known and not empty.
    HasContext,
    /// The context is known and empty (no context installed).
    HasNoContext,
    /// The context is known and has this key.
    HasKey(String),
    /// The context is known and maps the key to exactly this value.
    HasEntry(String, String),
}

impl Pred {
    fn holds(&self, s: &ContextualSample) -> bool {
        let Ok(map) = &s.context else { return false };
        match self {
            Pred::HasContext => !map.is_empty(),
            Pred::HasNoContext => map.is_empty(),
            Pred::HasKey(k) => map.get(k).is_some(),
            Pred::HasEntry(k, v) => map.get(k) == Some(v.as_str()),
        }
    }
}

/// A conjunction of predicates; empty: every sample passes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rule {
    pub preds: Vec<Pred>,
}

impl Rule {
    pub fn accepts(&self, s: &ContextualSample) -> bool {
        self.preds.iter().all(|p| p.holds(s))
    }
}

/// A parsed filter. Use [`Filter::parse`]; `None` there means "no filter".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Filter {
    /// The `*` rule.
    pub all: Option<Rule>,
    /// Rules of named event types, in the order given.
    pub per_type: Vec<(String, Rule)>,
}

impl Filter {
    /// Parses the text form. `Ok(None)` for an empty (or blank) spec. The error is one line.
    pub fn parse(spec: &str) -> Result<Option<Filter>, String> {
        Filter::parse_inner(spec).map_err(|e| e.replace(|c: char| c.is_control(), " "))
    }

    fn parse_inner(spec: &str) -> Result<Option<Filter>, String> {
        if spec.trim().is_empty() {
            return Ok(None);
        }
        let mut f = Filter::default();
        for item in spec.split(';').map(str::trim) {
            if item.is_empty() {
                return Err("empty rule (expected TYPE:PREDICATE, e.g. *:has_context)".into());
            }
            let Some((ty, preds)) = item.split_once(':') else {
                return Err(format!(
                    "rule '{item}' has no ':' (expected TYPE:PREDICATE, e.g. *:has_context)"
                ));
            };
            let ty = ty.trim();
            if ty.is_empty() || ty.chars().any(char::is_whitespace) {
                return Err(format!("bad event type '{ty}' in rule '{item}'"));
            }
            let rule = parse_rule(preds.trim()).map_err(|e| format!("rule '{item}': {e}"))?;
            if ty == "*" {
                if f.all.is_some() {
                    return Err("type * given twice".into());
                }
                f.all = Some(rule);
            } else {
                if f.per_type.iter().any(|(t, _)| t == ty) {
                    return Err(format!("type {ty} given twice"));
                }
                f.per_type.push((ty.to_string(), rule));
            }
        }
        Ok(Some(f))
    }

    /// The rule that decides samples of `event`, if any.
    pub fn rule_for(&self, event: &str) -> Option<&Rule> {
        self.per_type
            .iter()
            .find(|(t, _)| t == event)
            .map(|(_, r)| r)
            .or(self.all.as_ref())
    }

    /// Whether `s` passes.
    pub fn accepts(&self, s: &ContextualSample) -> bool {
        self.rule_for(&s.event).is_none_or(|r| r.accepts(s))
    }
}

fn parse_rule(preds: &str) -> Result<Rule, String> {
    if preds.is_empty() {
        return Err(
            "no predicate (known: any, has_context, has_no_context, has_key(K), \
                    has_entry(K=V))"
                .into(),
        );
    }
    let items: Vec<&str> = preds.split('+').map(str::trim).collect();
    if items.contains(&"any") {
        if items.len() > 1 {
            return Err("'any' cannot be combined with other predicates".into());
        }
        return Ok(Rule::default());
    }
    let mut rule = Rule::default();
    for item in items {
        rule.preds.push(parse_pred(item)?);
    }
    Ok(rule)
}

fn parse_pred(item: &str) -> Result<Pred, String> {
    match item {
        "has_context" => return Ok(Pred::HasContext),
        "has_no_context" => return Ok(Pred::HasNoContext),
        _ => {}
    }
    let arg = |name: &str| -> Option<&str> {
        item.strip_prefix(name)?
            .strip_prefix('(')?
            .strip_suffix(')')
            .map(str::trim)
    };
    if let Some(key) = arg("has_key") {
        return Ok(Pred::HasKey(decode_part(key, "key")?));
    }
    if let Some(entry) = arg("has_entry") {
        let Some((k, v)) = entry.split_once('=') else {
            return Err(format!(
                "'{item}' has no '=' (expected has_entry(KEY=VALUE))"
            ));
        };
        return Ok(Pred::HasEntry(
            decode_part(k.trim(), "key")?,
            decode_part(v.trim(), "value")?,
        ));
    }
    Err(format!(
        "unknown predicate '{item}' (known: any, has_context, has_no_context, has_key(K), \
         has_entry(K=V))"
    ))
}

/// Percent-decodes a key or value; it must be non-empty and free of unescaped reserved
/// characters.
fn decode_part(s: &str, what: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err(format!("empty {what}"));
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            let Some(v) = hex else {
                return Err(format!("bad escape in {what} '{s}' (expected %XX)"));
            };
            out.push(v);
            i += 3;
            continue;
        }
        if is_reserved(b) {
            return Err(format!(
                "{what} '{s}' contains '{}' (write it as %{b:02X})",
                b as char
            ));
        }
        out.push(b);
        i += 1;
    }
    String::from_utf8(out).map_err(|_| format!("{what} '{s}' is not UTF-8 after decoding"))
}

fn is_reserved(b: u8) -> bool {
    matches!(b, b';' | b'+' | b'(' | b')' | b'=' | b',' | b':' | b'%') || b.is_ascii_whitespace()
}

/// Percent-encodes a key or value for the text form.
pub fn encode_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if is_reserved(b) || !b.is_ascii() || b.is_ascii_control() {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(b as char);
        }
    }
    out
}

impl fmt::Display for Pred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pred::HasContext => f.write_str("has_context"),
            Pred::HasNoContext => f.write_str("has_no_context"),
            Pred::HasKey(k) => write!(f, "has_key({})", encode_part(k)),
            Pred::HasEntry(k, v) => {
                write!(f, "has_entry({}={})", encode_part(k), encode_part(v))
            }
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.preds.is_empty() {
            return f.write_str("any");
        }
        for (i, p) in self.preds.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// The canonical text form (parses back to an equal filter).
impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let rules = self
            .all
            .iter()
            .map(|r| ("*", r))
            .chain(self.per_type.iter().map(|(t, r)| (t.as_str(), r)));
        for (ty, rule) in rules {
            if !first {
                f.write_str(";")?;
            }
            first = false;
            write!(f, "{ty}:{rule}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
