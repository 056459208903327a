//! The agent's exit summary line `jfrctx: samples received=N ... ; sinks ...`.

use super::jvm::Output;

/// One sink's figures in the summary: `NAME records=N errors=N`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkFigures {
    pub name: String,
    pub records: u64,
    pub errors: u64,
}

/// The agent's exit line `jfrctx: samples received=N with_context=N without_context=N
/// unknown=N (...) dropped=N [filtered=N]; sinks NAME records=N errors=N, ...; ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSummary {
    pub line: String,
    pub received: u64,
    pub with_context: u64,
    pub without_context: u64,
    pub unknown: u64,
    pub dropped: u64,
    pub sinks: Vec<SinkFigures>,
}

fn number_after(text: &str, key: &str) -> Option<u64> {
    let at = text.find(key)? + key.len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

impl AgentSummary {
    /// Parses the summary line; `None` when `line` is not one.
    pub fn parse(line: &str) -> Option<AgentSummary> {
        let rest = line.strip_prefix("jfrctx: samples ")?;
        let mut parts = rest.splitn(3, "; ");
        let counts = parts.next()?;
        let sinks = parts.next()?.strip_prefix("sinks")?.trim();
        let mut figures = Vec::new();
        if sinks != "none" {
            for item in sinks.split(", ") {
                // NAME records=N errors=N (NAME may hold spaces: split from the right)
                let (head, errors) = item.rsplit_once(" errors=")?;
                let (name, records) = head.rsplit_once(" records=")?;
                figures.push(SinkFigures {
                    name: name.to_string(),
                    records: records.parse().ok()?,
                    errors: errors.parse().ok()?,
                });
            }
        }
        Some(AgentSummary {
            line: line.to_string(),
            received: number_after(counts, "received=")?,
            with_context: number_after(counts, "with_context=")?,
            without_context: number_after(counts, "without_context=")?,
            unknown: number_after(counts, " unknown=")?,
            dropped: number_after(counts, "dropped=")?,
            sinks: figures,
        })
    }

    /// `received == with_context + without_context + unknown + dropped`.
    pub fn balanced(&self) -> bool {
        self.received == self.with_context + self.without_context + self.unknown + self.dropped
    }

    /// The number after `key` (e.g. `"lost_entries="`) anywhere in the line; panics when there
    /// is none.
    pub fn figure(&self, key: &str) -> u64 {
        number_after(&self.line, key)
            .unwrap_or_else(|| panic!("no number after {key} in {}", self.line))
    }

    pub fn sink(&self, name_part: &str) -> &SinkFigures {
        self.sinks
            .iter()
            .find(|s| s.name.contains(name_part))
            .unwrap_or_else(|| panic!("no sink {name_part:?} in {}", self.line))
    }
}

impl Output {
    /// The agent's exit summary; panics (with the output) unless there is exactly one, and
    /// unless it adds up.
    pub fn agent_summary(&self) -> AgentSummary {
        let lines: Vec<&str> = self
            .agent_lines()
            .into_iter()
            .filter(|l| l.starts_with("jfrctx: samples "))
            .collect();
        assert_eq!(
            lines.len(),
            1,
            "expected exactly one `jfrctx: samples ...` summary line:\n{}",
            self.dump()
        );
        let summary = AgentSummary::parse(lines[0])
            .unwrap_or_else(|| panic!("cannot parse the summary {:?}", lines[0]));
        assert!(
            summary.balanced(),
            "summary does not add up (received = with + without + unknown + dropped): {}",
            summary.line
        );
        summary
    }

    /// The `jfrctx:` lines other than the summary.
    pub fn agent_messages(&self) -> Vec<&str> {
        self.agent_lines()
            .into_iter()
            .filter(|l| !l.starts_with("jfrctx: samples "))
            .collect()
    }
}
