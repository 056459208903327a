//! The worker's drain pace: how long to sleep before the next round, from how full the fullest
//! ring was at the last drain (pure).
//!
//! A thread that switches context faster than its ring holds per drain interval loses entries
//! (its samples become `unknown: log_overflow`): the default 1024-entry ring fills in ≈ 9 ms at
//! ≈ 115 k transitions/s while the default drain is every 10 ms. The drain already knows each
//! ring's `head - tail`, so the worker shortens its sleep when a ring was more than a quarter full
//! (aiming at an eighth at the measured rate), down to `MIN_SLEEP_NS`, and relaxes back to the
//! configured interval, doubling per round, once every ring stayed under a sixteenth. Between the
//! two it keeps its pace (hysteresis: a steady rate does not make it oscillate).
//!
//! Idle stretch: each round is a timed wake-up, ≈ 30–50 µs of CPU on a small VM even with
//! nothing to do (mostly the kernel's switch to the thread; 3–5 ms a second at 10 ms). Once the
//! rounds have found no entry in any ring and no ring come or gone for [`idle_max_ns`] (100 ms at
//! the default `drain`), the worker sets its long-sleep word; once every ring carries the wake
//! hint ([`long_sleep`]) the sleep doubles, up to
//! [`IDLE_STRETCH`] times the configured interval; the first round with anything to do clears the
//! word and returns to the configured pace. A thread that writes during the long sleep does not
//! wait for it: at the next half lap of its ring it finds the hint and wakes the worker
//! (`Natives.wake`, `ThreadLog.transition`), with half a ring to spare. Not sooner than that
//! idle time: work that comes in bursts with shorter gaps (a batch of requests, each on a fresh
//! thread, every 20 ms) would otherwise set the word in the short rounds after each burst, and
//! the next burst's first thread would wake the worker (a call into the agent on the
//! application's thread) and start the short rounds again: ≈ 330 rounds a second instead of 100.

/// Shortest sleep between two rounds.
pub const MIN_SLEEP_NS: i64 = 250_000;
/// Above this fill (of the fullest ring, at the last drain) the next round comes sooner.
pub const BUSY_FILL: f64 = 0.25;
/// Fill the shortened interval aims at.
pub const TARGET_FILL: f64 = 0.125;
/// Below this fill the interval grows back towards the configured one.
pub const QUIET_FILL: f64 = 0.0625;

/// The idle sleep is at most the configured interval times this (and at most [`IDLE_MAX_NS`]).
pub const IDLE_STRETCH: i64 = 10;
/// Longest idle sleep.
pub const IDLE_MAX_NS: i64 = 1_000_000_000;

/// Longest sleep after idle rounds for the configured interval `configured_ns`.
pub fn idle_max_ns(configured_ns: i64) -> i64 {
    configured_ns
        .saturating_mul(IDLE_STRETCH)
        .min(IDLE_MAX_NS)
        .max(configured_ns)
}

/// [`next_sleep_ns`] with the idle stretch, by [`long_sleep`]'s `pace`: [`Pace::Stretch`] doubles
/// the sleep up to `idle_max_ns`; [`Pace::Hurry`] (a thread woke the worker: its ring is filling
/// after a long sleep, at a rate the fill over that sleep does not tell) is the shortest sleep,
/// from which the adaptive pace relaxes as the fills allow; [`Pace::Usual`] is what
/// [`next_sleep_ns`] says, never above the configured interval.
pub fn next_round_sleep_ns(
    configured_ns: i64,
    idle_max_ns: i64,
    current_ns: i64,
    elapsed_ns: i64,
    peak_fill: f64,
    pace: Pace,
) -> i64 {
    let min = MIN_SLEEP_NS.min(configured_ns.max(1));
    match pace {
        Pace::Stretch => {
            let max = idle_max_ns.max(configured_ns.max(1));
            current_ns.saturating_mul(2).clamp(min, max)
        }
        Pace::Hurry => min,
        Pace::Usual => next_sleep_ns(configured_ns, current_ns, elapsed_ns, peak_fill),
    }
}

/// What the worker does with its long-sleep word after a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    /// Set it: the threads are told before any long sleep starts.
    Set,
    /// Clear it: the round had something to do.
    Clear,
    /// Leave it as it is.
    Keep,
}

/// How the sleep after a round is chosen, see [`next_round_sleep_ns`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// The adaptive pace up to the configured interval.
    Usual,
    /// Longer: the threads are told and every ring is idle.
    Stretch,
    /// The shortest: a thread woke the worker.
    Hurry,
}

/// After a round: how the next sleep is chosen, and what becomes of the word.
/// `can_stretch`: not in live mode; `idle`: the round found nothing; `settled`: the rounds have
/// been idle for at least [`idle_max_ns`] (their sleeps summed, this one's included);
/// `told_rounds`: rounds in a row, this one included, that began with the word set (each such
/// round's drain set the wake hint of every ring, `Ring::hint_wake`); `told_now`: the word is set
/// now; `woken`: the worker left the word set after its last round and a thread has cleared it
/// since (`Natives.wake`).
///
/// A settled idle round with the word clear sets it and keeps the configured pace (an idle round
/// before that keeps the word clear: see the module's text on bursts). The next round sets
/// every ring's hint; the one after it, still at the usual interval, drains whatever a thread
/// wrote before it could see its hint. Only then, if idle and still told, does the sleep stretch;
/// a thread that writes after that sees its hint at its next half lap and wakes the worker, and
/// the rounds after a wake hurry: the ring is filling at a rate the long sleep does not tell.
pub fn long_sleep(
    can_stretch: bool,
    idle: bool,
    settled: bool,
    told_rounds: u32,
    told_now: bool,
    woken: bool,
) -> (Pace, Word) {
    if woken {
        return (Pace::Hurry, Word::Keep);
    }
    if !can_stretch || !idle {
        return (Pace::Usual, if told_now { Word::Clear } else { Word::Keep });
    }
    if told_rounds == 0 {
        let word = if settled && !told_now {
            Word::Set
        } else {
            Word::Keep
        };
        return (Pace::Usual, word);
    }
    let pace = if told_rounds >= 2 && told_now {
        Pace::Stretch
    } else {
        Pace::Usual
    };
    (pace, Word::Keep)
}

/// Sleep before the next round. `configured_ns`: the `drain` option; `current_ns`: the sleep
/// before the last round; `elapsed_ns`: time between the last two drains (what the fill
/// accumulated over; `<= 0` when unknown, e.g. the first round); `peak_fill`: entries found in
/// the fullest ring at the last drain over its capacity (above 1 when entries were lost).
pub fn next_sleep_ns(configured_ns: i64, current_ns: i64, elapsed_ns: i64, peak_fill: f64) -> i64 {
    let max = configured_ns.max(1);
    let min = MIN_SLEEP_NS.min(max);
    let current = current_ns.clamp(min, max);
    if peak_fill.is_nan() {
        return current;
    }
    if peak_fill > BUSY_FILL {
        // The fill grew at about `peak_fill / elapsed`: the interval that would fill to the
        // target at that rate. Never longer than the current one.
        let basis = if elapsed_ns > 0 { elapsed_ns } else { current };
        let aimed = (basis as f64 * TARGET_FILL / peak_fill) as i64;
        return aimed.min(current).clamp(min, max);
    }
    if peak_fill < QUIET_FILL {
        return current.saturating_mul(2).clamp(min, max);
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    #[test]
    fn the_long_sleep_word_and_pace_after_each_kind_of_round() {
        use Pace::*;
        use Word::*;
        // (can_stretch, idle, settled, told_rounds, told_now, woken) → (pace, word)
        let table = [
            // Idle for long enough, word clear: set it, keep the pace.
            ((true, true, true, 0, false, false), (Usual, Set)),
            // Idle, but not for long (the short rounds after a burst): the word stays clear.
            ((true, true, false, 0, false, false), (Usual, Keep)),
            // The round that set the rings' hints: still the usual pace.
            ((true, true, true, 1, true, false), (Usual, Keep)),
            // Idle again after that: stretch, as long as the word stays set.
            ((true, true, true, 2, true, false), (Stretch, Keep)),
            ((true, true, true, 9, true, false), (Stretch, Keep)),
            // A thread cleared the word during the sleep or the round: its ring is filling.
            ((true, false, false, 0, false, true), (Hurry, Keep)),
            ((true, true, true, 3, false, true), (Hurry, Keep)),
            // Work, or live mode: the word is cleared (or stays clear).
            ((true, false, false, 3, true, false), (Usual, Clear)),
            ((true, false, false, 0, false, false), (Usual, Keep)),
            ((false, true, true, 0, false, false), (Usual, Keep)),
            ((false, true, true, 1, true, false), (Usual, Clear)),
        ];
        for ((can, idle, settled, rounds, now, woken), expected) in table {
            let got = long_sleep(can, idle, settled, rounds, now, woken);
            let inputs = (can, idle, settled, rounds, now, woken);
            assert_eq!(got, expected, "{inputs:?}");
        }
        let max = idle_max_ns(10 * MS);
        let hurry = next_round_sleep_ns(10 * MS, max, max, max, 0.5, Hurry);
        assert_eq!(hurry, MIN_SLEEP_NS);
    }

    #[test]
    fn quiet_rings_keep_the_configured_interval() {
        assert_eq!(next_sleep_ns(10 * MS, 10 * MS, 10 * MS, 0.0), 10 * MS);
        assert_eq!(next_sleep_ns(10 * MS, 10 * MS, 10 * MS, 0.2), 10 * MS);
    }

    #[test]
    fn a_ring_filling_in_one_interval_shortens_the_next_sleep() {
        // 115 k/s into 1024 entries over 10 ms: 1150 found (126 lost) → fill 1.12.
        let next = next_sleep_ns(10 * MS, 10 * MS, 10 * MS, 1150.0 / 1024.0);
        assert!((MIN_SLEEP_NS..=2 * MS).contains(&next), "{next}");
        // Just above a quarter: somewhat shorter.
        let next = next_sleep_ns(10 * MS, 10 * MS, 10 * MS, 0.3);
        assert_eq!(next, (10.0 * MS as f64 * TARGET_FILL / 0.3) as i64);
    }

    #[test]
    fn never_below_the_minimum_nor_above_the_configured() {
        assert_eq!(next_sleep_ns(10 * MS, MS, MS, 50.0), MIN_SLEEP_NS);
        assert_eq!(next_sleep_ns(10 * MS, 10 * MS, 0, 1e9), MIN_SLEEP_NS);
        assert_eq!(next_sleep_ns(10 * MS, 80 * MS, 10 * MS, 0.0), 10 * MS);
        // A configured interval below the minimum is kept as the floor too.
        assert_eq!(
            next_sleep_ns(MIN_SLEEP_NS / 2, MIN_SLEEP_NS / 2, MIN_SLEEP_NS / 2, 5.0),
            MIN_SLEEP_NS / 2
        );
        assert_eq!(next_sleep_ns(0, 0, 0, 5.0), 1);
    }

    #[test]
    fn busy_at_a_short_interval_does_not_grow_it() {
        // Already at 2 ms and still above a quarter: shorter, never longer.
        let next = next_sleep_ns(10 * MS, 2 * MS, 2 * MS, 0.26);
        assert!((MIN_SLEEP_NS..2 * MS).contains(&next), "{next}");
    }

    #[test]
    fn steady_rate_between_the_thresholds_holds_the_pace() {
        assert_eq!(next_sleep_ns(10 * MS, 2 * MS, 2 * MS, 0.125), 2 * MS);
        assert_eq!(next_sleep_ns(10 * MS, 2 * MS, 2 * MS, 0.25), 2 * MS);
        assert_eq!(next_sleep_ns(10 * MS, 2 * MS, 2 * MS, QUIET_FILL), 2 * MS);
    }

    #[test]
    fn relaxes_back_by_doubling_when_quiet() {
        let mut sleep = MS;
        let mut steps = Vec::new();
        while sleep < 10 * MS {
            sleep = next_sleep_ns(10 * MS, sleep, sleep, 0.01);
            steps.push(sleep / MS);
        }
        assert_eq!(steps, vec![2, 4, 8, 10]);
        // From the floor: 0.25 → 0.5 → 1 → 2 → 4 → 8 → 10 ms.
        let mut sleep = MIN_SLEEP_NS;
        let mut rounds = 0;
        while sleep < 10 * MS {
            sleep = next_sleep_ns(10 * MS, sleep, sleep, 0.01);
            rounds += 1;
        }
        assert_eq!(rounds, 6);
    }

    #[test]
    fn elapsed_unknown_uses_the_current_sleep() {
        assert_eq!(
            next_sleep_ns(10 * MS, 8 * MS, 0, 0.5),
            (8.0 * MS as f64 * TARGET_FILL / 0.5) as i64
        );
    }

    #[test]
    fn a_burst_then_quiet_converges_back() {
        // Rate 115 entries/ms into 1024 slots: simulate the fill each interval produces.
        let fill =
            |sleep_ns: i64, rate_per_ms: f64| rate_per_ms * sleep_ns as f64 / MS as f64 / 1024.0;
        let mut sleep = 10 * MS;
        for _ in 0..5 {
            sleep = next_sleep_ns(10 * MS, sleep, sleep, fill(sleep, 115.0));
            assert!(fill(sleep, 115.0) <= BUSY_FILL, "{sleep}");
        }
        for _ in 0..5 {
            sleep = next_sleep_ns(10 * MS, sleep, sleep, fill(sleep, 0.0));
        }
        assert_eq!(sleep, 10 * MS);
    }

    #[test]
    fn idle_rounds_stretch_the_sleep_up_to_ten_times() {
        let max = idle_max_ns(10 * MS);
        assert_eq!(max, 100 * MS);
        let mut sleep = 10 * MS;
        let mut steps = Vec::new();
        for _ in 0..6 {
            sleep = next_round_sleep_ns(10 * MS, max, sleep, sleep, 0.0, Pace::Stretch);
            steps.push(sleep / MS);
        }
        assert_eq!(steps, vec![20, 40, 80, 100, 100, 100]);
        assert_eq!(idle_max_ns(500 * MS), IDLE_MAX_NS);
        assert_eq!(idle_max_ns(DRAIN_MAX), DRAIN_MAX);
    }

    #[test]
    fn the_first_busy_round_after_idle_returns_to_the_configured_pace() {
        let max = idle_max_ns(10 * MS);
        // Anything drained or a ring come or gone: at most the configured interval at once.
        assert_eq!(
            next_round_sleep_ns(10 * MS, max, 100 * MS, 100 * MS, 0.01, Pace::Usual),
            10 * MS
        );
        // A ring half full: sooner.
        let next = next_round_sleep_ns(10 * MS, max, 100 * MS, 30 * MS, 0.5, Pace::Usual);
        assert_eq!(next, (30.0 * MS as f64 * TARGET_FILL / 0.5) as i64);
        // Without the stretch (live mode passes the configured interval as the maximum).
        assert_eq!(
            next_round_sleep_ns(10 * MS, 10 * MS, 10 * MS, 10 * MS, 0.0, Pace::Stretch),
            10 * MS
        );
    }

    const DRAIN_MAX: i64 = 1_000 * MS;

    #[test]
    fn nan_fill_keeps_the_pace() {
        assert_eq!(next_sleep_ns(10 * MS, 3 * MS, 3 * MS, f64::NAN), 3 * MS);
    }
}
