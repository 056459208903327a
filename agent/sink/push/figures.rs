//! What the push sink did, for the exit summary.

/// What the push sink did with its profiles; `profiles = pushed + refused + failed + dropped`
/// once it finished.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushFigures {
    /// The endpoint, `http[s]://host:port/path`.
    pub target: String,
    /// Profiles made (intervals with samples).
    pub profiles: u64,
    /// Profiles the endpoint took (2xx).
    pub pushed: u64,
    /// Profiles the endpoint refused (4xx other than 408, 429): not retried.
    pub refused: u64,
    /// Profiles given up after their attempts failed (5xx, 408, 429, network, timeouts).
    pub failed: u64,
    /// Attempts after a failed one.
    pub retried: u64,
    /// Profiles never (fully) tried: dropped from the full queue, or unsent at the exit bound.
    pub dropped: u64,
    /// The last refusal: status and the first 200 bytes of the answer.
    pub last_refusal: Option<(u16, String)>,
    /// Label keys left out of pushed profiles (`push_budget`, trace ids, ...), with the samples
    /// pushed without them.
    pub left_out: Vec<(String, u64)>,
    /// Samples of the profiles not taken (refused, failed, dropped).
    pub lost_samples: u64,
}
