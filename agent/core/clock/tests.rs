use super::*;

/// Deterministic xorshift generator for jitter.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in `0..n`.
    fn below(&mut self, n: i64) -> i64 {
        (self.next() % n as u64) as i64
    }
}

/// Truth: `nanos = offset + ticks * ns_per_tick`.
struct Truth {
    offset: i64,
    ns_per_tick: f64,
}
impl Truth {
    fn nanos(&self, ticks: i64) -> i64 {
        self.offset + (ticks as f64 * self.ns_per_tick).round() as i64
    }
    /// A bracket around the tick instant: `early` ns before, `late` ns after.
    fn bracket(&self, ticks: i64, early: i64, late: i64) -> Bracket {
        let t = self.nanos(ticks);
        Bracket {
            ticks,
            before_ns: t - early,
            after_ns: t + late,
        }
    }
}

fn calibrate(brackets: impl IntoIterator<Item = Bracket>) -> Calibration {
    let mut c = Calibrator::new();
    for b in brackets {
        c.add(b);
    }
    c.calibration().expect("calibration")
}

fn assert_close(cal: &Calibration, truth: &Truth, ticks: i64, bound: i64) {
    let err = (cal.to_nanos(ticks) - truth.nanos(ticks)).abs();
    assert!(
        err <= bound,
        "error {err} ns > {bound} at tick {ticks} (uncertainty {})",
        cal.uncertainty_ns()
    );
}

#[test]
fn none_until_twenty_brackets() {
    let truth = Truth {
        offset: 5_000,
        ns_per_tick: 1.0,
    };
    let mut c = Calibrator::new();
    for i in 0..19 {
        c.add(truth.bracket(1_000 + i * 1_000_000, 10, 10));
        assert!(c.calibration().is_none());
    }
    c.add(truth.bracket(50_000_000, 10, 10));
    assert_eq!(c.calibration().unwrap().brackets(), 20);
}

#[test]
fn inverted_brackets_are_ignored() {
    let mut c = Calibrator::new();
    c.add(Bracket {
        ticks: 1,
        before_ns: 10,
        after_ns: 9,
    });
    assert!(c.is_empty());
}

#[test]
fn window_is_bounded() {
    let truth = Truth {
        offset: 0,
        ns_per_tick: 1.0,
    };
    let mut c = Calibrator::new();
    for i in 0..(WINDOW as i64 + 100) {
        c.add(truth.bracket(i * 1000, 5, 5));
    }
    assert_eq!(c.len(), WINDOW);
    assert_eq!(c.calibration().unwrap().brackets(), WINDOW);
}

#[test]
fn all_same_tick_gives_none() {
    let mut c = Calibrator::new();
    for i in 0..30 {
        c.add(Bracket {
            ticks: 7,
            before_ns: 100 + i,
            after_ns: 200 + i,
        });
    }
    assert!(c.calibration().is_none());
}

#[test]
fn unit_slope_with_large_offset() {
    // nanoTime-like values near 1e15 and ticks that lag by a constant.
    let truth = Truth {
        offset: 987_654_321_012_345,
        ns_per_tick: 1.0,
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let brackets: Vec<Bracket> = (0..200)
        .map(|i| {
            let w = 20 + rng.below(180);
            let early = rng.below(w + 1);
            truth.bracket(
                3_000_000 + i * 5_000_000 + rng.below(1000),
                early,
                w - early,
            )
        })
        .collect();
    let cal = calibrate(brackets);
    assert!(
        (cal.ns_per_tick() - 1.0).abs() < 1e-6,
        "{}",
        cal.ns_per_tick()
    );
    assert!(cal.uncertainty_ns() <= 50, "{}", cal.uncertainty_ns());
    for t in [3_000_000, 500_000_000, 1_000_000_000] {
        assert_close(&cal, &truth, t, cal.uncertainty_ns() + 2);
    }
    assert_eq!(cal.duration_to_nanos(1_000), 1_000);
}

#[test]
fn tsc_like_slope() {
    // 2.5 GHz ticks: 0.4 ns per tick.
    let truth = Truth {
        offset: 12_345_678_901,
        ns_per_tick: 0.4,
    };
    let mut rng = Rng(42);
    let brackets: Vec<Bracket> = (0..300)
        .map(|i| {
            let w = 30 + rng.below(100);
            let early = rng.below(w + 1);
            truth.bracket(1_000_000_000_000 + i * 25_000_000, early, w - early)
        })
        .collect();
    let cal = calibrate(brackets);
    assert!(
        (cal.ns_per_tick() - 0.4).abs() < 1e-6,
        "{}",
        cal.ns_per_tick()
    );
    assert!(cal.uncertainty_ns() <= 60, "{}", cal.uncertainty_ns());
    for t in [1_000_000_000_000, 1_003_000_000_000, 1_007_475_000_000] {
        assert_close(&cal, &truth, t, cal.uncertainty_ns() + 2);
    }
    assert_eq!(cal.duration_to_nanos(2_500), 1_000);
}

#[test]
fn wide_outliers_do_not_bend_the_fit() {
    let truth = Truth {
        offset: -4_000_000,
        ns_per_tick: 1.0,
    };
    let mut rng = Rng(7);
    let brackets: Vec<Bracket> = (0..200)
        .map(|i| {
            let ticks = 10_000_000 + i * 2_000_000;
            if i % 10 == 3 {
                // Preempted between the two reads: very wide, tick near one end.
                truth.bracket(ticks, 10, 2_000_000 + rng.below(1_000_000))
            } else {
                let w = 40 + rng.below(60);
                let early = rng.below(w + 1);
                truth.bracket(ticks, early, w - early)
            }
        })
        .collect();
    let cal = calibrate(brackets);
    assert!(
        (cal.ns_per_tick() - 1.0).abs() < 1e-6,
        "{}",
        cal.ns_per_tick()
    );
    assert!(cal.uncertainty_ns() <= 50, "{}", cal.uncertainty_ns());
    for t in [10_000_000, 200_000_000, 408_000_000] {
        assert_close(&cal, &truth, t, cal.uncertainty_ns() + 2);
    }
}

#[test]
fn contradictory_brackets_fall_back_and_widen() {
    let truth = Truth {
        offset: 1_000,
        ns_per_tick: 1.0,
    };
    let mut brackets: Vec<Bracket> = (0..40)
        .map(|i| truth.bracket(i * 1_000_000, 20, 20))
        .collect();
    // A narrow bracket that excludes the truth: the intersection becomes empty.
    let t = truth.nanos(20_500_000);
    brackets.push(Bracket {
        ticks: 20_500_000,
        before_ns: t + 100,
        after_ns: t + 110,
    });
    let cal = calibrate(brackets);
    assert!(cal.uncertainty_ns() >= 60, "{}", cal.uncertainty_ns());
    assert_close(&cal, &truth, 20_000_000, 5);
    assert_close(&cal, &truth, 20_000_000, cal.uncertainty_ns());
}

#[test]
fn extreme_inputs_do_not_panic() {
    let mut c = Calibrator::new();
    for i in 0..30 {
        c.add(Bracket {
            ticks: if i % 2 == 0 {
                i64::MIN + i
            } else {
                i64::MAX - i
            },
            before_ns: i64::MIN + i,
            after_ns: i64::MAX - i,
        });
    }
    if let Some(cal) = c.calibration() {
        let _ = cal.to_nanos(i64::MAX);
        let _ = cal.to_nanos(i64::MIN);
        let _ = cal.duration_to_nanos(i64::MAX);
    }
}

#[test]
fn uncertainty_bounds_the_error_across_the_window() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for trial in 0..40 {
        let truth = Truth {
            offset: rng.below(1_000_000_000_000),
            ns_per_tick: [1.0, 0.4, 0.37][trial % 3],
        };
        let n = 20 + rng.below(500);
        let spacing = 1_000 + rng.below(50_000_000);
        let mut c = Calibrator::new();
        let mut ticks = vec![];
        for i in 0..n {
            let t = 1_000_000 + i * spacing + rng.below(1000);
            let mut w = 10 + rng.below(300);
            if rng.below(20) == 0 {
                w += 1_000_000;
            }
            let early = rng.below(w + 1);
            c.add(truth.bracket(t, early, w - early));
            ticks.push(t);
        }
        let cal = c.calibration().expect("calibration");
        assert!(
            cal.uncertainty_ns() <= 40,
            "trial {trial}: {}",
            cal.uncertainty_ns()
        );
        for &t in ticks.iter().rev().take(WINDOW) {
            assert_close(&cal, &truth, t, cal.uncertainty_ns());
            assert_close(&cal, &truth, t + spacing / 2, cal.uncertainty_ns());
        }
    }
}

#[test]
fn cache_follows_the_window() {
    let truth = Truth {
        offset: 0,
        ns_per_tick: 1.0,
    };
    let mut c = Calibrator::new();
    for i in 0..30 {
        c.add(truth.bracket(i * 1_000_000, 50, 50));
    }
    let first = c.calibration().unwrap();
    assert_eq!(c.calibration(), Some(first));
    c.add(truth.bracket(31_000_000, 1, 1));
    let second = c.calibration().unwrap();
    assert_eq!(second.brackets(), 31);
    assert_ne!(second, first);
}

#[test]
fn hull_keeps_only_binding_points() {
    let mut pts = vec![
        (0.0, 0.0),
        (1.0, 5.0),
        (2.0, 1.0),
        (3.0, 4.0),
        (4.0, 0.0),
        (1.0, -3.0),
    ];
    let hull = upper_hull(&mut pts);
    assert_eq!(hull, vec![(0.0, 0.0), (1.0, 5.0), (3.0, 4.0), (4.0, 0.0)]);
    for s in [-3.0, -1.0, 0.0, 0.5, 2.0, 7.0] {
        let all = pts
            .iter()
            .map(|p| p.1 - s * p.0)
            .fold(f64::NEG_INFINITY, f64::max);
        let kept = hull
            .iter()
            .map(|p| p.1 - s * p.0)
            .fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(all, kept, "slope {s}");
    }
}
