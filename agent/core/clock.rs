//! JFR tick ↔ `System.nanoTime()` calibration (the facts it relies on: ARCHITECTURE.md, "Facts the code relies on").
//!
//! The bridge commits small JFR events between two `System.nanoTime()` reads; each gives a
//! [`Bracket`]: the event's start tick was taken at some instant in `[before_ns, after_ns]`.
//! The mapping is `nanos = slope * (ticks - ref_ticks) + ref_ns + offset`.
//!
//! * Slope, first estimate: least squares of bracket midpoints against ticks, over the brackets
//!   whose width is not far above the median (a bracket widened by preemption has a meaningless
//!   midpoint). Ticks are taken relative to a reference tick so the fit keeps f64 precision.
//! * Offset: each bracket (widened by 1 ns on each side: both clocks are read as integers)
//!   says that for a slope `s` the offset lies in `[before - s*t, after - s*t]`; the
//!   intersection of those intervals pins it (its centre is used). The least-squares slope is
//!   noisy enough to make that intersection empty once there are many narrow brackets, so the
//!   slope is refined: the intersection's width is a concave function of `s` (only the convex
//!   hulls of the bracket ends matter), and the slope maximising it, found by golden-section
//!   search in `[ls/2, 2*ls]`, is used.
//! * Uncertainty: the largest distance, anywhere between the window's first and last tick, from
//!   the chosen line to any line that passes through every bracket. It bounds the error inside
//!   the window when the brackets are honest; extrapolation beyond the window can be worse.
//! * When no slope gives a non-empty intersection (noise, a bad bracket), the least-squares
//!   slope and the median of midpoint residuals are used instead, and the uncertainty is
//!   half the median width plus how far the brackets contradict each other.
//! * A fit over 512 brackets costs ~80 µs (release); it is cached until the next bracket.
//!
//! Never assumes 1 tick = 1 ns.

use std::cell::Cell;
use std::collections::VecDeque;

/// A JFR event whose start tick was taken between two `System.nanoTime()` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bracket {
    pub ticks: i64,
    pub before_ns: i64,
    pub after_ns: i64,
}

/// Brackets kept for the fit (the most recent ones).
pub const WINDOW: usize = 512;
/// Brackets needed before a calibration is offered.
pub const MIN_BRACKETS: usize = 20;

/// Collects brackets and fits the tick → nanoseconds mapping.
#[derive(Debug, Clone, Default)]
pub struct Calibrator {
    window: VecDeque<Bracket>,
    /// The last fit, until the window changes.
    cache: Cell<Option<Option<Calibration>>>,
}

impl Calibrator {
    pub fn new() -> Self {
        Calibrator {
            window: VecDeque::with_capacity(WINDOW),
            cache: Cell::new(None),
        }
    }

    /// Adds a bracket; one with `after_ns < before_ns` is ignored. Keeps the last [`WINDOW`].
    pub fn add(&mut self, b: Bracket) {
        if b.after_ns < b.before_ns {
            return;
        }
        if self.window.len() == WINDOW {
            self.window.pop_front();
        }
        self.window.push_back(b);
        self.cache.set(None);
    }

    /// Number of brackets currently in the window.
    pub fn len(&self) -> usize {
        self.window.len()
    }

    pub fn is_empty(&self) -> bool {
        self.window.is_empty()
    }

    /// The fitted mapping; `None` until [`MIN_BRACKETS`] brackets arrived, or when the brackets
    /// do not determine a positive slope (e.g. all share one tick). The fit is cached until the
    /// next accepted [`Calibrator::add`].
    pub fn calibration(&self) -> Option<Calibration> {
        if let Some(cached) = self.cache.get() {
            return cached;
        }
        let fitted = self.fit();
        self.cache.set(Some(fitted));
        fitted
    }

    fn fit(&self) -> Option<Calibration> {
        if self.window.len() < MIN_BRACKETS {
            return None;
        }
        let first = self.window[0];
        let (ref_ticks, ref_ns) = (first.ticks, first.before_ns);
        // Coordinates relative to the first bracket; i128 so no difference can overflow.
        let rel = |v: i64, r: i64| (i128::from(v) - i128::from(r)) as f64;
        let points: Vec<Point> = self
            .window
            .iter()
            .map(|b| Point {
                x: rel(b.ticks, ref_ticks),
                lo: rel(b.before_ns, ref_ns) - QUANTUM_NS,
                hi: rel(b.after_ns, ref_ns) + QUANTUM_NS,
            })
            .collect();
        let fit = Fit::new(&points);

        // First estimate of the slope: least squares over the narrow brackets only.
        let mut widths: Vec<f64> = points.iter().map(Point::width).collect();
        widths.sort_unstable_by(f64::total_cmp);
        let median_width = widths[widths.len() / 2];
        let limit = (median_width * 4.0).max(median_width + 100.0);
        let narrow: Vec<&Point> = points.iter().filter(|p| p.width() <= limit).collect();
        let ls_slope = fit_slope(narrow.iter().map(|p| (p.x, p.mid())))?;

        // Refine: the slope leaving the widest intersection.
        let (min_s, max_s) = (ls_slope * 0.5, ls_slope * 2.0);
        let best = argmax(&|s| fit.gap(s), min_s, max_s);
        let (lower, upper) = fit.bounds(best);
        let (slope, offset, uncertainty) = if lower <= upper {
            let offset = (lower + upper) / 2.0;
            // Every line through all brackets has a slope in [s_lo, s_hi]; bound how far any of
            // them strays from the chosen line over the window. The distance is convex in the
            // tick, so its maximum is at one end of the window.
            let feasible = |s: f64| fit.gap(s) >= 0.0;
            let s_lo = boundary(&feasible, best, min_s);
            let s_hi = boundary(&feasible, best, max_s);
            let (x_min, x_max) = points
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
                    (a.min(p.x), b.max(p.x))
                });
            let mut uncertainty = (upper - lower) / 2.0;
            for end in [x_min, x_max] {
                let chosen = offset + best * end;
                let highest = fit.upper_at(argmax(&|s| fit.upper_at(s, end), s_lo, s_hi), end);
                let lowest = fit.lower_at(argmax(&|s| -fit.lower_at(s, end), s_lo, s_hi), end);
                uncertainty = uncertainty.max(highest - chosen).max(chosen - lowest);
            }
            (best, offset, uncertainty)
        } else {
            // No line goes through every bracket: keep the least-squares slope, take the median
            // residual, and widen the uncertainty by how far the brackets contradict each other.
            let (lower, upper) = fit.bounds(ls_slope);
            let mut residuals: Vec<f64> = narrow.iter().map(|p| p.mid() - ls_slope * p.x).collect();
            residuals.sort_unstable_by(f64::total_cmp);
            let median = residuals[residuals.len() / 2];
            let spread = (lower - upper).max(0.0) + median_width / 2.0;
            (ls_slope, median, spread)
        };
        Some(Calibration {
            ref_ticks,
            ref_ns,
            offset,
            slope,
            uncertainty_ns: uncertainty.ceil().clamp(0.0, i64::MAX as f64) as i64,
            brackets: points.len(),
        })
    }
}

/// Both clocks are read as integers: a bracket is widened by this much on each side.
const QUANTUM_NS: f64 = 1.0;

/// A bracket in fit coordinates: the tick instant lies in `[lo, hi]` at tick `x`.
struct Point {
    x: f64,
    lo: f64,
    hi: f64,
}

impl Point {
    fn width(&self) -> f64 {
        self.hi - self.lo
    }
    fn mid(&self) -> f64 {
        (self.lo + self.hi) / 2.0
    }
}

/// Lines `nanos = s * x + c` through the brackets. Only the upper hull of the `(x, lo)` points
/// and the lower hull of the `(x, hi)` points can bind, so only those are kept.
struct Fit {
    lows: Vec<(f64, f64)>,
    highs: Vec<(f64, f64)>,
}

impl Fit {
    fn new(points: &[Point]) -> Fit {
        let mut lows: Vec<(f64, f64)> = points.iter().map(|p| (p.x, p.lo)).collect();
        let mut highs: Vec<(f64, f64)> = points.iter().map(|p| (p.x, -p.hi)).collect();
        let mut highs_hull = upper_hull(&mut highs);
        for h in &mut highs_hull {
            h.1 = -h.1;
        }
        Fit {
            lows: upper_hull(&mut lows),
            highs: highs_hull,
        }
    }

    /// For slope `s`, the offsets `c` consistent with every bracket: `[max(lo - s*x),
    /// min(hi - s*x)]` (empty when the first exceeds the second).
    fn bounds(&self, s: f64) -> (f64, f64) {
        let l = self
            .lows
            .iter()
            .fold(f64::NEG_INFINITY, |l, &(x, lo)| l.max(lo - s * x));
        let u = self
            .highs
            .iter()
            .fold(f64::INFINITY, |u, &(x, hi)| u.min(hi - s * x));
        (l, u)
    }

    /// Width of the consistent offsets; concave in `s`.
    fn gap(&self, s: f64) -> f64 {
        let (l, u) = self.bounds(s);
        u - l
    }

    /// Highest value at tick `x` of a consistent line of slope `s` (concave in `s`).
    fn upper_at(&self, s: f64, x: f64) -> f64 {
        self.bounds(s).1 + s * x
    }

    /// Lowest value at tick `x` of a consistent line of slope `s` (convex in `s`).
    fn lower_at(&self, s: f64, x: f64) -> f64 {
        self.bounds(s).0 + s * x
    }
}

/// Upper convex hull of `points` (sorted in place by x): the points that can maximise
/// `y - s*x` for some `s`.
fn upper_hull(points: &mut [(f64, f64)]) -> Vec<(f64, f64)> {
    points.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let mut hull: Vec<(f64, f64)> = Vec::new();
    for &p in points.iter() {
        if hull.last().is_some_and(|q| q.0 == p.0) {
            continue; // same x, lower y: never binds
        }
        while hull.len() >= 2 {
            let (a, b) = (hull[hull.len() - 2], hull[hull.len() - 1]);
            // Drop b when it lies on or below the segment a-p.
            let cross = (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0);
            if cross >= 0.0 {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(p);
    }
    hull
}

/// Least-squares slope of `y` against `x`; `None` when undetermined or not positive.
fn fit_slope(points: impl Iterator<Item = (f64, f64)> + Clone) -> Option<f64> {
    let mut n = 0.0;
    let (mut sx, mut sy) = (0.0, 0.0);
    for (x, y) in points.clone() {
        n += 1.0;
        sx += x;
        sy += y;
    }
    if n < 2.0 {
        return None;
    }
    let (mx, my) = (sx / n, sy / n);
    let (mut sxx, mut sxy) = (0.0, 0.0);
    for (x, y) in points {
        sxx += (x - mx) * (x - mx);
        sxy += (x - mx) * (y - my);
    }
    let slope = sxy / sxx;
    (sxx > 0.0 && slope.is_finite() && slope > 0.0).then_some(slope)
}

/// Golden-section search for the maximum of a concave `f` on `[a, b]` (`0 < a <= b`).
fn argmax(f: &dyn Fn(f64) -> f64, mut a: f64, mut b: f64) -> f64 {
    const INV_PHI: f64 = 0.618_033_988_749_894_9;
    let mut c = b - (b - a) * INV_PHI;
    let mut d = a + (b - a) * INV_PHI;
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..200 {
        if b - a <= b.abs() * 1e-15 {
            break;
        }
        if fc >= fd {
            b = d;
            d = c;
            fd = fc;
            c = b - (b - a) * INV_PHI;
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + (b - a) * INV_PHI;
            fd = f(d);
        }
    }
    (a + b) / 2.0
}

/// The last point from `inside` towards `outside` where `pred` holds, by bisection (`pred` holds
/// at `inside` and on an interval around it).
fn boundary(pred: &dyn Fn(f64) -> bool, mut inside: f64, mut outside: f64) -> f64 {
    if pred(outside) {
        return outside;
    }
    for _ in 0..200 {
        let mid = (inside + outside) / 2.0;
        if mid == inside || mid == outside {
            break;
        }
        if pred(mid) {
            inside = mid;
        } else {
            outside = mid;
        }
    }
    inside
}

/// A fitted tick → `System.nanoTime()` mapping.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    ref_ticks: i64,
    ref_ns: i64,
    /// Nanoseconds at `ref_ticks`, relative to `ref_ns`.
    offset: f64,
    slope: f64,
    uncertainty_ns: i64,
    brackets: usize,
}

impl Calibration {
    /// A tick instant on the `System.nanoTime()` scale (saturating at the i64 range).
    pub fn to_nanos(&self, ticks: i64) -> i64 {
        let dt = (i128::from(ticks) - i128::from(self.ref_ticks)) as f64;
        let rel = (self.offset + self.slope * dt).round();
        // `as` saturates for out-of-range floats.
        (i128::from(self.ref_ns) + rel as i128).clamp(i64::MIN.into(), i64::MAX.into()) as i64
    }

    /// A tick duration in nanoseconds (saturating).
    pub fn duration_to_nanos(&self, ticks: i64) -> i64 {
        (self.slope * ticks as f64).round() as i64
    }

    pub fn ns_per_tick(&self) -> f64 {
        self.slope
    }

    /// Bound on the error of [`Calibration::to_nanos`] near the brackets, in nanoseconds.
    pub fn uncertainty_ns(&self) -> i64 {
        self.uncertainty_ns
    }

    /// Brackets the fit used.
    pub fn brackets(&self) -> usize {
        self.brackets
    }
}

#[cfg(test)]
mod tests;
