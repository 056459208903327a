//! What the push thread does with a profile, without threads, sockets or clocks of its own
//! (pure): the bounded queue, the retry backoff, and [`deliver`], which drives one profile's
//! attempts through an injected [`Attempts`] (clock, sender, pause).

use std::collections::VecDeque;
use std::time::Duration;

use super::http::SendError;

/// Profiles waiting to be sent; a new one beyond this drops the oldest (counted).
pub const QUEUE_CAPACITY: usize = 8;
/// Attempts per profile (the first and the retries).
pub const MAX_ATTEMPTS: u32 = 4;
/// Pause before retry 1; doubled for each further retry, up to [`BACKOFF_MAX`].
pub const BACKOFF_BASE: Duration = Duration::from_millis(500);
pub const BACKOFF_MAX: Duration = Duration::from_secs(4);
/// An attempt needs at least this much time before the exit deadline to be started.
pub const MIN_ATTEMPT: Duration = Duration::from_millis(50);
/// Longest time one attempt may take when no deadline applies (connect + send + answer).
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);

/// The pause before retry `n` (1-based): 0.5 s, 1 s, 2 s, 4 s, 4 s, ...
pub fn backoff(retry: u32) -> Duration {
    let shift = retry.saturating_sub(1).min(16);
    BACKOFF_BASE.saturating_mul(1 << shift).min(BACKOFF_MAX)
}

/// A FIFO of at most `capacity` items that makes room by dropping its oldest.
#[derive(Debug)]
pub struct Bounded<T> {
    items: VecDeque<T>,
    capacity: usize,
}

impl<T> Bounded<T> {
    pub fn new(capacity: usize) -> Bounded<T> {
        Bounded {
            items: VecDeque::with_capacity(capacity),
            capacity: capacity.max(1),
        }
    }

    /// Appends `item`; returns the oldest item when it had to go to make room.
    pub fn push(&mut self, item: T) -> Option<T> {
        let evicted = if self.items.len() >= self.capacity {
            self.items.pop_front()
        } else {
            None
        };
        self.items.push_back(item);
        evicted
    }

    pub fn pop(&mut self) -> Option<T> {
        self.items.pop_front()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Removes everything; returns how many items there were.
    pub fn clear(&mut self) -> usize {
        let n = self.items.len();
        self.items.clear();
        n
    }
}

/// What [`deliver`] needs from the world.
pub trait Attempts {
    /// Monotonic time.
    fn now(&mut self) -> Duration;
    /// The exit deadline on the [`Attempts::now`] scale, once the agent is shutting down.
    fn deadline(&mut self) -> Option<Duration>;
    /// One attempt, which must give up after `timeout`.
    fn send(&mut self, timeout: Duration) -> Result<(), SendError>;
    /// Waits `d`, or less when the deadline appears meanwhile.
    fn pause(&mut self, d: Duration);
    /// An attempt failed with `e`; `retry_in` is the pause before the next attempt, `None`
    /// when the profile is given up.
    fn failed(&mut self, _e: &SendError, _retry_in: Option<Duration>) {}
}

/// How one profile ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub pushed: bool,
    /// Attempts made (0: no time was left for one).
    pub attempts: u32,
    /// Attempts after the first.
    pub retries: u32,
    /// The last failure (also when a retry then succeeded).
    pub error: Option<String>,
    /// The server refused the profile (status, start of its answer): not retried.
    pub refused: Option<(u16, String)>,
}

/// Sends one profile: up to [`MAX_ATTEMPTS`] attempts with [`backoff`] pauses between them, no
/// retry after an error that is not retryable, and, once there is a deadline, no attempt or
/// pause that would end after it (each attempt's timeout is cut to the time left).
pub fn deliver(env: &mut dyn Attempts) -> Outcome {
    let mut out = Outcome {
        pushed: false,
        attempts: 0,
        retries: 0,
        error: None,
        refused: None,
    };
    loop {
        let left = env.deadline().map(|d| d.saturating_sub(env.now()));
        let timeout = left.map_or(ATTEMPT_TIMEOUT, |l| l.min(ATTEMPT_TIMEOUT));
        if timeout < MIN_ATTEMPT {
            out.error
                .get_or_insert_with(|| "no time left before exit".into());
            return out;
        }
        out.attempts += 1;
        match env.send(timeout) {
            Ok(()) => {
                out.pushed = true;
                return out;
            }
            Err(e) => {
                out.error = Some(e.message.clone());
                out.refused.clone_from(&e.refusal);
                let wait = backoff(out.retries + 1);
                let give_up = !e.retryable
                    || out.retries + 1 >= MAX_ATTEMPTS
                    || env
                        .deadline()
                        .is_some_and(|d| env.now() + wait + MIN_ATTEMPT > d);
                env.failed(&e, (!give_up).then_some(wait));
                if give_up {
                    return out;
                }
                out.retries += 1;
                env.pause(wait);
            }
        }
    }
}

#[cfg(test)]
mod tests;
