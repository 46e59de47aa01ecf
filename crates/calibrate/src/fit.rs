//! Least squares on relative error: every row counts by its error as a fraction
//! of what was measured, so a 2-byte latency of 1 µs and a 2-MiB latency of 176 µs
//! weigh alike (an unweighted fit would let the largest sizes decide the
//! intercept alone). Weighted least squares with weights 1/t², in centred form.

/// t = a + c·s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Line {
    /// Intercept (t at s = 0).
    pub a: f64,
    /// Slope (t per unit of s).
    pub c: f64,
}

impl Line {
    /// The line at `s`.
    pub fn at(&self, s: f64) -> f64 {
        self.a + self.c * s
    }
}

/// The line through `(s, t)` points minimising Σ((a + c·s − t)/t)². One point,
/// or points all at one `s`, give a flat line through their (weighted) mean.
/// `None` for no points or a `t` that is not positive.
pub fn line(points: &[(f64, f64)]) -> Option<Line> {
    if points.is_empty() || points.iter().any(|&(_, t)| !(t > 0.0 && t.is_finite())) {
        return None;
    }
    let w = |t: f64| 1.0 / (t * t);
    let sw: f64 = points.iter().map(|&(_, t)| w(t)).sum();
    let sbar = points.iter().map(|&(s, t)| w(t) * s).sum::<f64>() / sw;
    let tbar = points.iter().map(|&(_, t)| w(t) * t).sum::<f64>() / sw;
    let sxx: f64 = points.iter().map(|&(s, t)| w(t) * (s - sbar) * (s - sbar)).sum();
    let sxy: f64 = points.iter().map(|&(s, t)| w(t) * (s - sbar) * (t - tbar)).sum();
    let c = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    Some(Line { a: tbar - c * sbar, c })
}

/// The constant minimising Σ((a − t)/t)²: Σ(1/t) / Σ(1/t²).
pub fn constant(ts: &[f64]) -> Option<f64> {
    if ts.is_empty() || ts.iter().any(|&t| !(t > 0.0 && t.is_finite())) {
        return None;
    }
    Some(ts.iter().map(|t| 1.0 / t).sum::<f64>() / ts.iter().map(|t| 1.0 / (t * t)).sum::<f64>())
}

/// The slope of t = c·s minimising Σ((c·s − t)/t)²: Σ(s/t) / Σ(s²/t²).
pub fn proportional(points: &[(f64, f64)]) -> Option<f64> {
    if points.is_empty() || points.iter().any(|&(s, t)| !(t > 0.0 && t.is_finite() && s > 0.0)) {
        return None;
    }
    Some(points.iter().map(|(s, t)| s / t).sum::<f64>() / points.iter().map(|(s, t)| (s / t) * (s / t)).sum::<f64>())
}

/// (fitted − measured) / measured.
pub fn relative(fitted: f64, measured: f64) -> f64 {
    (fitted - measured) / measured
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_an_exact_line_across_six_decades() {
        let pts: Vec<(f64, f64)> = [2.0, 64.0, 4096.0, 262_144.0, 8_388_608.0]
            .iter()
            .map(|&s| (s, 1.48 + s / 11_950.0))
            .collect();
        let l = line(&pts).unwrap();
        assert!(
            (l.a - 1.48).abs() < 1e-9 && (1.0 / l.c - 11_950.0).abs() < 1e-6,
            "{l:?}"
        );
    }

    #[test]
    fn weighs_rows_by_relative_error() {
        // A 1% error on the largest point moves the intercept by far less than the
        // same absolute error would under unweighted least squares.
        let mut pts: Vec<(f64, f64)> = [2.0, 4.0, 8.0, 1e6].iter().map(|&s| (s, 1.0 + s / 1e4)).collect();
        pts[3].1 *= 1.01;
        let l = line(&pts).unwrap();
        assert!((l.a - 1.0).abs() < 0.01, "{l:?}");
        for &(s, t) in &pts {
            assert!(relative(l.at(s), t).abs() < 0.01);
        }
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(line(&[]), None);
        assert_eq!(line(&[(2.0, 0.0)]), None);
        assert_eq!(line(&[(2.0, 1.5)]), Some(Line { a: 1.5, c: 0.0 }));
        assert_eq!(constant(&[2.0, 2.0]), Some(2.0));
        let c = constant(&[1.0, 2.0]).unwrap();
        // Σ(1/t)/Σ(1/t²) = 1.5/1.25
        assert!((c - 1.2).abs() < 1e-12);
        assert!((proportional(&[(10.0, 1.0), (20.0, 2.0)]).unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(proportional(&[(0.0, 1.0)]), None);
    }
}
