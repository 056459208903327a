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
mod tests {
    use super::*;

    /// A virtual clock: sends take `send_takes` (or their whole timeout when `hang`), pauses
    /// take what they are asked; the deadline appears at `closing_at`.
    struct Fake {
        now: Duration,
        results: Vec<Result<(), SendError>>,
        hang: bool,
        send_takes: Duration,
        closing_at: Option<Duration>,
        exit_bound: Duration,
        sends: Vec<(Duration, Duration)>,
        pauses: Vec<Duration>,
    }

    fn fake(results: Vec<Result<(), SendError>>) -> Fake {
        Fake {
            now: Duration::ZERO,
            results,
            hang: false,
            send_takes: Duration::from_millis(10),
            closing_at: None,
            exit_bound: Duration::from_secs(2),
            sends: Vec::new(),
            pauses: Vec::new(),
        }
    }

    fn down() -> Result<(), SendError> {
        Err(SendError::retry("refused".into()))
    }

    impl Attempts for Fake {
        fn now(&mut self) -> Duration {
            self.now
        }
        fn deadline(&mut self) -> Option<Duration> {
            self.closing_at
                .filter(|c| self.now >= *c)
                .map(|c| c + self.exit_bound)
        }
        fn send(&mut self, timeout: Duration) -> Result<(), SendError> {
            self.sends.push((self.now, timeout));
            self.now += if self.hang { timeout } else { self.send_takes };
            if self.results.is_empty() {
                down()
            } else {
                self.results.remove(0)
            }
        }
        fn pause(&mut self, d: Duration) {
            self.pauses.push(d);
            self.now += d;
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let ms = |n| backoff(n).as_millis();
        assert_eq!(
            [ms(1), ms(2), ms(3), ms(4), ms(5), ms(99)],
            [500, 1000, 2000, 4000, 4000, 4000]
        );
    }

    #[test]
    fn queue_drops_the_oldest() {
        let mut q = Bounded::new(3);
        assert_eq!([q.push(1), q.push(2), q.push(3)], [None, None, None]);
        assert_eq!(q.push(4), Some(1));
        assert_eq!(q.len(), 3);
        assert_eq!(q.pop(), Some(2));
        assert_eq!(q.clear(), 2);
        assert!(q.is_empty());
    }

    #[test]
    fn first_success() {
        let mut f = fake(vec![Ok(())]);
        let o = deliver(&mut f);
        assert_eq!(
            (o.pushed, o.attempts, o.retries, o.error),
            (true, 1, 0, None)
        );
        assert_eq!(f.sends, [(Duration::ZERO, ATTEMPT_TIMEOUT)]);
    }

    #[test]
    fn retries_with_backoff_then_succeeds() {
        let mut f = fake(vec![down(), down(), Ok(())]);
        let o = deliver(&mut f);
        assert!(o.pushed);
        assert_eq!(o.retries, 2);
        assert_eq!(o.error.as_deref(), Some("refused"));
        assert_eq!(f.pauses, [backoff(1), backoff(2)]);
    }

    #[test]
    fn gives_up_after_max_attempts() {
        let mut f = fake(vec![]);
        let o = deliver(&mut f);
        assert!(!o.pushed);
        assert_eq!(o.retries, MAX_ATTEMPTS - 1);
        assert_eq!(f.sends.len(), MAX_ATTEMPTS as usize);
        assert_eq!(f.pauses, [backoff(1), backoff(2), backoff(3)]);
    }

    #[test]
    fn a_permanent_error_is_not_retried() {
        let mut f = fake(vec![super::super::http::check_status(400, "bad")]);
        let o = deliver(&mut f);
        assert_eq!((o.pushed, o.attempts, o.retries), (false, 1, 0));
        assert_eq!(o.error.as_deref(), Some("HTTP 400: bad"));
        assert_eq!(o.refused, Some((400, "bad".into())));
    }

    #[test]
    fn a_hanging_endpoint_is_bounded_by_the_exit_deadline() {
        let mut f = fake(vec![]);
        f.hang = true;
        f.closing_at = Some(Duration::ZERO);
        let o = deliver(&mut f);
        assert!(!o.pushed);
        // One attempt cut to the 2 s left; no time for a pause and another attempt.
        assert_eq!(f.sends, [(Duration::ZERO, Duration::from_secs(2))]);
        assert!(f.now <= Duration::from_secs(2));
    }

    #[test]
    fn closing_during_backoff_cuts_the_retries() {
        let mut f = fake(vec![]);
        f.closing_at = Some(Duration::from_millis(100));
        let o = deliver(&mut f);
        assert!(!o.pushed);
        // Attempt at 0, pause 0.5 s (deadline appears at 0.1 s: 2.1 s), attempt, pause 1 s,
        // attempt at ~1.52 s; the 2 s pause would end after the deadline.
        assert_eq!(f.sends.len(), 3, "{:?}", f.sends);
        assert!(f.now <= Duration::from_millis(2100), "{:?}", f.now);
    }

    #[test]
    fn no_attempt_after_the_deadline() {
        let mut f = fake(vec![Ok(())]);
        f.closing_at = Some(Duration::ZERO);
        f.exit_bound = Duration::from_millis(10);
        let o = deliver(&mut f);
        assert!(!o.pushed);
        assert!(f.sends.is_empty());
        assert_eq!(o.attempts, 0);
        assert_eq!(o.error.as_deref(), Some("no time left before exit"));
    }
}
