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
