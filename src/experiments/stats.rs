//! The statistics of an experiment (issue 48): per arm, the conversions and the net revenue per
//! visitor; per variant against the control (arm 0), the Bayesian chance to beat it and the
//! expected loss of choosing either; the sample-ratio-mismatch test of the split; and the stopping
//! rule that names the winner.
//!
//! Conversions use Beta(1, 1) priors, so an arm with `k` conversions out of `n` visitors has the
//! posterior Beta(1 + k, 1 + n - k); the chance and the losses are integrated numerically (not a
//! normal approximation), to about 1e-13 (absolute) for counts from 0 to millions of visitors.
//! Revenue uses a normal posterior of each arm's mean (GrowthBook's Bayesian engine with an
//! uninformative prior). The special functions (ln Γ, the regularized incomplete beta and gamma
//! functions, the normal cdf) are written out here: no crate of the dependency tree provides them.

use serde::{Deserialize, Serialize};

/// An arm's conversions: visitors exposed and visitors who converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Conversion {
    /// Visitors exposed to the arm.
    pub visitors: u64,
    /// Of them, the visitors who converted (at most `visitors`; more counts as `visitors`).
    pub conversions: u64,
}

/// An arm's revenue per visitor, as sums over its exposed visitors (each visitor's net cents, zeros
/// included).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Revenue {
    /// Visitors exposed to the arm, paying or not.
    pub visitors: u64,
    /// The sum of the visitors' net revenue, in cents.
    pub sum: f64,
    /// The sum of the squares of the visitors' net revenue, in cents².
    pub sum_squares: f64,
}

impl Revenue {
    /// Adds one exposed visitor who brought `cents` of net revenue (0 for one who did not pay).
    pub fn add(&mut self, cents: f64) {
        self.visitors += 1;
        self.sum += cents;
        self.sum_squares += cents * cents;
    }

    /// The net revenue per visitor, in cents (0 with no visitors).
    pub fn mean(&self) -> f64 {
        if self.visitors == 0 {
            0.0
        } else {
            self.sum / self.visitors as f64
        }
    }

    /// The variance of the mean, s²/n in cents² (s² the sample variance, with n - 1), or `None`
    /// with fewer than two visitors.
    fn mean_variance(&self) -> Option<f64> {
        if self.visitors < 2 {
            return None;
        }
        let n = self.visitors as f64;
        let variance = ((self.sum_squares - self.sum * self.mean()) / (n - 1.0)).max(0.0);
        Some(variance / n)
    }
}

/// A 95 % interval, in the unit of its metric (a rate, or cents per visitor).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// The lower bound.
    pub low: f64,
    /// The upper bound.
    pub high: f64,
}

/// A variant against the control.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// P(variant's true value > control's), from 0 to 1.
    pub chance_to_beat: f64,
    /// E[max(control - variant, 0)]: what choosing the variant risks (same unit as the metric: a
    /// rate, or cents per visitor).
    pub expected_loss: f64,
    /// E[max(variant - control, 0)]: what keeping the control risks.
    pub expected_loss_control: f64,
    /// The variant's posterior mean less the control's (same unit as the metric).
    pub difference: f64,
}

/// The 97.5th percentile of the standard normal distribution: a 95 % interval is the mean ± this
/// many standard errors.
const Z_975: f64 = 1.959_963_984_540_054;

/// The equal-tailed 95 % credible interval of an arm's conversion rate: the 2.5th and 97.5th
/// percentiles of its posterior Beta(1 + conversions, 1 + visitors - conversions).
pub fn conversion_interval(c: Conversion) -> Interval {
    let posterior = Beta::of(c);
    Interval {
        low: posterior.quantile(0.025),
        high: posterior.quantile(0.975),
    }
}

/// The 95 % interval of an arm's net revenue per visitor, in cents: the mean ± 1.96 standard errors
/// (s/√n, s the sample standard deviation with n - 1). With fewer than two visitors there is no
/// spread to measure and the interval is the mean alone.
pub fn revenue_interval(r: Revenue) -> Interval {
    let mean = r.mean();
    let half = r.mean_variance().map_or(0.0, |v| Z_975 * v.sqrt());
    Interval {
        low: mean - half,
        high: mean + half,
    }
}

/// A variant's conversion rate against the control's, with Beta(1, 1) priors, computed exactly (by
/// numerical integration of the two Beta posteriors, not a normal approximation).
///
/// The chance is P(p_B > p_A) = ∫ f_B(x) F_A(x) dx. The expected losses reduce to the same kind of
/// one-dimensional integral: for A ~ Beta(a, b), E[p_A · 1{A > B}] = a/(a + b) · P(A' > B) with
/// A' ~ Beta(a + 1, b), so E[(p_A - p_B)⁺] = m_A · P(A' > B) - m_B · P(A > B') (m the posterior
/// means), and the same with the arms swapped.
pub fn compare_conversion(control: Conversion, variant: Conversion) -> Comparison {
    let a = Beta::of(control);
    let b = Beta::of(variant);
    let a_up = Beta {
        a: a.a + 1.0,
        b: a.b,
    };
    let b_up = Beta {
        a: b.a + 1.0,
        b: b.b,
    };
    let expected_loss =
        a.mean() * probability_greater(a_up, b) - b.mean() * probability_greater(a, b_up);
    let expected_loss_control =
        b.mean() * probability_greater(b_up, a) - a.mean() * probability_greater(b, a_up);
    Comparison {
        chance_to_beat: probability_greater(b, a),
        expected_loss: expected_loss.max(0.0),
        expected_loss_control: expected_loss_control.max(0.0),
        difference: b.mean() - a.mean(),
    }
}

/// A variant's net revenue per visitor against the control's, in cents per visitor.
///
/// Each arm's mean has the normal posterior N(mean, s²/n) (a flat prior), so the difference Δ of
/// the variant's less the control's is normal with variance σ² = s_A²/n_A + s_B²/n_B: the chance
/// to beat is Φ(Δ/σ) and the losses are E[max(X, 0)] = μΦ(μ/σ) + σφ(μ/σ) for X ~ N(μ, σ²), with
/// μ = -Δ (choosing the variant) or Δ (keeping the control). This is GrowthBook's Bayesian engine
/// with an uninformative prior on an absolute difference
/// (<https://docs.growthbook.io/statistics/details>).
///
/// An arm with fewer than two visitors, or two arms without any spread, say nothing about how far
/// the means could be off: the chance is then 0.5 (so the stopping rule never picks a side) and
/// each loss is the bare difference of the means where it goes against that side.
pub fn compare_revenue(control: Revenue, variant: Revenue) -> Comparison {
    let difference = variant.mean() - control.mean();
    let variance = match (control.mean_variance(), variant.mean_variance()) {
        (Some(a), Some(b)) => a + b,
        _ => 0.0,
    };
    if variance > 0.0 {
        let sd = variance.sqrt();
        Comparison {
            chance_to_beat: normal_cdf(difference / sd),
            expected_loss: positive_part_mean(-difference, sd),
            expected_loss_control: positive_part_mean(difference, sd),
            difference,
        }
    } else {
        Comparison {
            chance_to_beat: 0.5,
            expected_loss: (-difference).max(0.0),
            expected_loss_control: difference.max(0.0),
            difference,
        }
    }
}

/// GrowthBook's default threshold of the sample-ratio-mismatch test: warn when the p-value of
/// [`srm_p_value`] is below it.
pub const SRM_THRESHOLD: f64 = 0.001;

/// The p-value of the sample-ratio-mismatch test: how likely a split at least this far from the
/// intended one is if visitors really were assigned by `weights` (a chi-square goodness-of-fit
/// test, expected count of arm i = total · weights[i] / Σ weights, k - 1 degrees of freedom).
///
/// `observed[i]` is arm i's exposures and `weights[i]` its intended share (any non-negative scale);
/// pairs beyond the shorter slice are ignored. With fewer than two arms, no visitors or no weight
/// the test has nothing to say and the answer is 1. An arm of weight 0 that got visitors gives 0.
pub fn srm_p_value(observed: &[u64], weights: &[f64]) -> f64 {
    let arms = observed.len().min(weights.len());
    let total: f64 = observed[..arms].iter().map(|&n| n as f64).sum();
    let weight: f64 = weights[..arms].iter().sum();
    if arms < 2 || total <= 0.0 || weight <= 0.0 {
        return 1.0;
    }
    let mut statistic = 0.0;
    for (&n, &w) in observed.iter().zip(weights) {
        let expected = total * w / weight;
        let difference = n as f64 - expected;
        if expected > 0.0 {
            statistic += difference * difference / expected;
        } else if n > 0 {
            return 0.0;
        }
    }
    regularized_upper_gamma((arms - 1) as f64 / 2.0, statistic / 2.0)
}

/// The stopping rule of an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    /// Exposures every arm needs before a winner may be named.
    pub min_exposures: u64,
    /// Days the experiment runs before a winner may be named.
    pub min_days: u32,
    /// The chance to beat (0 to 1, e.g. 0.95) a variant needs to win; the control wins when every
    /// variant's is at most 1 - this.
    pub chance: f64,
    /// The expected loss the winner must stay below, in the metric's unit (a rate such as 0.002
    /// for 0.2 percentage points, or cents per visitor).
    pub max_loss: f64,
}

/// What the stopping rule says of an experiment now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "state",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Decision {
    /// Fewer exposures (in some arm) or days than the rule asks.
    Collecting {
        /// The exposures the arm furthest from the rule's minimum still needs (0 when all have
        /// enough).
        exposures_needed: u64,
        /// The days still to run (0 when enough have passed).
        days_needed: u32,
    },
    /// Enough data, no arm meets the rule yet.
    Undecided,
    /// Arm `arm` (an index; 0 = the control) meets the rule.
    Winner {
        /// The winning arm's index.
        arm: usize,
    },
}

/// Applies the stopping rule. `comparisons[i]` is arm i+1 against the control (arm 0);
/// `exposures[i]` is arm i's.
///
/// Winner: the variant with chance_to_beat ≥ rule.chance and expected_loss < rule.max_loss (the
/// highest chance if several, the lowest arm on a tie); else the control, when there are variants
/// and every one has chance_to_beat ≤ 1 - rule.chance and expected_loss_control < rule.max_loss;
/// else Undecided. Collecting while any arm has fewer than rule.min_exposures or days_running <
/// rule.min_days.
pub fn decide(
    rule: &Rule,
    days_running: u32,
    exposures: &[u64],
    comparisons: &[Comparison],
) -> Decision {
    let exposures_needed = exposures
        .iter()
        .map(|&n| rule.min_exposures.saturating_sub(n))
        .max()
        .unwrap_or(rule.min_exposures);
    let days_needed = rule.min_days.saturating_sub(days_running);
    if exposures_needed > 0 || days_needed > 0 {
        return Decision::Collecting {
            exposures_needed,
            days_needed,
        };
    }
    let mut best: Option<(usize, f64)> = None;
    for (i, c) in comparisons.iter().enumerate() {
        let wins = c.chance_to_beat >= rule.chance && c.expected_loss < rule.max_loss;
        if wins && best.is_none_or(|(_, chance)| c.chance_to_beat > chance) {
            best = Some((i + 1, c.chance_to_beat));
        }
    }
    if let Some((arm, _)) = best {
        return Decision::Winner { arm };
    }
    let control_wins = !comparisons.is_empty()
        && comparisons.iter().all(|c| {
            c.chance_to_beat <= 1.0 - rule.chance && c.expected_loss_control < rule.max_loss
        });
    if control_wins {
        Decision::Winner { arm: 0 }
    } else {
        Decision::Undecided
    }
}

/// A Beta(a, b) distribution: the posterior of a conversion rate.
#[derive(Debug, Clone, Copy)]
struct Beta {
    a: f64,
    b: f64,
}

/// Where [`probability_greater`] cuts the range of a distribution before integrating, in standard
/// deviations from its mean: fine near the mean, coarse in the tails, out to ±40 where, for a, b ≥
/// 1, the mass beyond is below 1e-17 (the heaviest tail, Beta(1, b)'s, falls like e^(-41) there).
const CUTS_SDS: [f64; 13] = [
    -40.0, -16.0, -8.0, -4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 40.0,
];

impl Beta {
    /// The posterior of a rate after `c`, from a Beta(1, 1) prior.
    fn of(c: Conversion) -> Self {
        let k = c.conversions.min(c.visitors);
        Self {
            a: 1.0 + k as f64,
            b: 1.0 + (c.visitors - k) as f64,
        }
    }

    /// The mean: the rate's expected value.
    fn mean(self) -> f64 {
        self.a / (self.a + self.b)
    }

    /// The standard deviation.
    fn sd(self) -> f64 {
        let s = self.a + self.b;
        (self.a * self.b / (s * s * (s + 1.0))).sqrt()
    }

    /// The points [`CUTS_SDS`] standard deviations from the mean, within [0, 1], in order.
    fn cuts(self) -> impl Iterator<Item = f64> {
        let (mean, sd) = (self.mean(), self.sd());
        CUTS_SDS
            .into_iter()
            .map(move |k| (mean + k * sd).clamp(0.0, 1.0))
    }

    /// The density at x.
    fn pdf(self, x: f64) -> f64 {
        if x <= 0.0 || x >= 1.0 {
            return 0.0;
        }
        (ln_beta_kernel(x, self.a, self.b) - x.ln() - (-x).ln_1p()).exp()
    }

    /// P(rate ≤ x).
    fn cdf(self, x: f64) -> f64 {
        regularized_beta(x, self.a, self.b)
    }

    /// The `p` quantile (0 < p < 1), by bisection to the last bit.
    fn quantile(self, p: f64) -> f64 {
        let (mut low, mut high) = (0.0_f64, 1.0_f64);
        loop {
            let middle = 0.5 * (low + high);
            if middle <= low || middle >= high {
                return middle;
            }
            if self.cdf(middle) < p {
                low = middle;
            } else {
                high = middle;
            }
        }
    }
}

/// P(X > Y) for independent X and Y: ∫ f_X(t) F_Y(t) dt over where X has its mass, cut at both
/// distributions' scales ([`Beta::cuts`]) so that a narrow one is not stepped over.
fn probability_greater(x: Beta, y: Beta) -> f64 {
    let mut cuts: Vec<f64> = x.cuts().collect();
    let (low, high) = (cuts[0], cuts[cuts.len() - 1]);
    cuts.extend(y.cuts().filter(|&t| t > low && t < high));
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    // Far in X's tails the density alone bounds the integrand: the cdf is not worth computing.
    let integrand = |t: f64| {
        let density = x.pdf(t);
        if density < 1e-30 {
            0.0
        } else {
            density * y.cdf(t)
        }
    };
    cuts.windows(2)
        .map(|w| integrate_adaptive(&integrand, w[0], w[1], 40))
        .sum::<f64>()
        .clamp(0.0, 1.0)
}

/// The 15-point Gauss–Kronrod rule's nodes on [-1, 1] (the positive half; QUADPACK's qk15).
const KRONROD_NODES: [f64; 8] = [
    0.991_455_371_120_812_6,
    0.949_107_912_342_758_5,
    0.864_864_423_359_769_1,
    0.741_531_185_599_394_4,
    0.586_087_235_467_691_1,
    0.405_845_151_377_397_2,
    0.207_784_955_007_898_5,
    0.0,
];
/// The Kronrod weights of [`KRONROD_NODES`].
const KRONROD_WEIGHTS: [f64; 8] = [
    0.022_935_322_010_529_22,
    0.063_092_092_629_978_55,
    0.104_790_010_322_250_18,
    0.140_653_259_715_525_92,
    0.169_004_726_639_267_9,
    0.190_350_578_064_785_4,
    0.204_432_940_075_298_9,
    0.209_482_141_084_727_83,
];
/// The embedded 7-point Gauss weights, of the odd [`KRONROD_NODES`] (1, 3, 5 and the centre 7).
const GAUSS_WEIGHTS: [f64; 4] = [
    0.129_484_966_168_869_7,
    0.279_705_391_489_276_7,
    0.381_830_050_505_118_9,
    0.417_959_183_673_469_4,
];

/// ∫ f over [low, high] by the Gauss–Kronrod 7–15 pair, halving the interval while the two rules
/// differ by more than 1e-15 (absolute) or 1e-10 of the value (the 15-point result is then far
/// closer than that), at most `depth` times.
fn integrate_adaptive(f: &impl Fn(f64) -> f64, low: f64, high: f64, depth: u32) -> f64 {
    let centre = 0.5 * (low + high);
    let half = 0.5 * (high - low);
    let mut kronrod = KRONROD_WEIGHTS[7] * f(centre);
    let mut gauss = GAUSS_WEIGHTS[3] * f(centre);
    for (i, (&node, &weight)) in KRONROD_NODES[..7].iter().zip(&KRONROD_WEIGHTS).enumerate() {
        let pair = f(centre - half * node) + f(centre + half * node);
        kronrod += weight * pair;
        if i % 2 == 1 {
            gauss += GAUSS_WEIGHTS[i / 2] * pair;
        }
    }
    let (kronrod, gauss) = (kronrod * half, gauss * half);
    if depth == 0 || (kronrod - gauss).abs() <= 1e-15_f64.max(1e-10 * kronrod.abs()) {
        kronrod
    } else {
        integrate_adaptive(f, low, centre, depth - 1)
            + integrate_adaptive(f, centre, high, depth - 1)
    }
}

/// ln Γ(x) for x > 0: the Lanczos approximation (g = 7, nine terms; relative error ~1e-15).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return ln_gamma(x + 1.0) - x.ln();
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, &c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// Where [`stirling_correction`] is accurate to ~2e-14 and ln Γ is taken from Stirling's series.
const STIRLING_FROM: f64 = 10.0;

/// ln Γ(x) - [(x - 1/2) ln x - x + ln √(2π)] for x ≥ [`STIRLING_FROM`]: the tail of Stirling's
/// series, kept apart so that ratios of large gamma functions do not cancel.
fn stirling_correction(x: f64) -> f64 {
    let r = 1.0 / (x * x);
    (1.0 / 12.0 - r * (1.0 / 360.0 - r * (1.0 / 1260.0 - r * (1.0 / 1680.0 - r / 1188.0)))) / x
}

/// ln B(a, b) = ln Γ(a) + ln Γ(b) - ln Γ(a + b), with ln Γ(big) - ln Γ(a + b) written without
/// cancellation when the larger argument is large.
fn ln_beta(a: f64, b: f64) -> f64 {
    let (small, big) = if a < b { (a, b) } else { (b, a) };
    if big < STIRLING_FROM {
        return ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b);
    }
    ln_gamma(small) - (big - 0.5) * (small / big).ln_1p() - small * (small + big).ln()
        + small
        + stirling_correction(big)
        - stirling_correction(small + big)
}

/// ln[x^a (1 - x)^b / B(a, b)] for 0 < x < 1. With both a and b large the terms of order a and b
/// are combined around the mode-like point a/(a + b) first (as DiDonato and Morris do), which keeps
/// ~1e-13 relative accuracy for counts in the millions.
fn ln_beta_kernel(x: f64, a: f64, b: f64) -> f64 {
    if a.min(b) < STIRLING_FROM {
        return a * x.ln() + b * (-x).ln_1p() - ln_beta(a, b);
    }
    let s = a + b;
    let (x0, y0) = (a / s, b / s);
    let e = x - x0;
    a * (e / x0).ln_1p() + b * (-e / y0).ln_1p() + 0.5 * (a * b / s).ln()
        - 0.5 * (2.0 * std::f64::consts::PI).ln()
        - stirling_correction(a)
        - stirling_correction(b)
        + stirling_correction(s)
}

/// Below this a continued fraction's denominator counts as zero (modified Lentz).
const TINY: f64 = 1e-300;
/// The relative change at which a series or continued fraction has converged.
const EPSILON: f64 = 1e-15;
/// The most terms a series or continued fraction takes (enough for arguments of ~10⁹).
const MAX_TERMS: u32 = 1_000_000;

/// The regularized incomplete beta function I_x(a, b): the cdf of Beta(a, b) at x.
fn regularized_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        0.0
    } else if x >= 1.0 {
        1.0
    } else if x < (a + 1.0) / (a + b + 2.0) {
        ln_beta_kernel(x, a, b).exp() * beta_continued_fraction(x, a, b) / a
    } else {
        1.0 - ln_beta_kernel(1.0 - x, b, a).exp() * beta_continued_fraction(1.0 - x, b, a) / b
    }
}

/// The continued fraction of I_x(a, b) (Numerical Recipes' betacf, by the modified Lentz method),
/// which converges fast for x < (a + 1)/(a + b + 2).
fn beta_continued_fraction(x: f64, a: f64, b: f64) -> f64 {
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..=MAX_TERMS {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((a - 1.0 + m2) * (a + m2));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1.0 + m2));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < EPSILON {
            break;
        }
    }
    h
}

/// The upper regularized incomplete gamma function Q(a, x) = Γ(a, x)/Γ(a): the chance that a
/// Gamma(a) variable exceeds x (by the series of P below a + 1, the continued fraction above;
/// Numerical Recipes' gser and gcf).
fn regularized_upper_gamma(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let prefactor = (a * x.ln() - x - ln_gamma(a)).exp();
    if x < a + 1.0 {
        let mut term = 1.0 / a;
        let mut sum = term;
        let mut denominator = a;
        for _ in 0..MAX_TERMS {
            denominator += 1.0;
            term *= x / denominator;
            sum += term;
            if term.abs() < sum.abs() * EPSILON {
                break;
            }
        }
        1.0 - sum * prefactor
    } else {
        let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / TINY;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..=MAX_TERMS {
            let i = f64::from(i);
            let an = -i * (i - a);
            b += 2.0;
            d = 1.0 / guard(an * d + b);
            c = guard(b + an / c);
            let step = d * c;
            h *= step;
            if (step - 1.0).abs() < EPSILON {
                break;
            }
        }
        h * prefactor
    }
}

/// The complementary error function, erfc(x) = Q(1/2, x²) for x ≥ 0 (relative error ~1e-15).
fn erfc(x: f64) -> f64 {
    let upper = regularized_upper_gamma(0.5, x * x);
    if x >= 0.0 { upper } else { 2.0 - upper }
}

/// Φ(z), the standard normal cdf.
fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// φ(z), the standard normal density.
fn normal_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// E[max(X, 0)] for X ~ N(mean, sd²), sd > 0: mean·Φ(mean/sd) + sd·φ(mean/sd).
fn positive_part_mean(mean: f64, sd: f64) -> f64 {
    let z = mean / sd;
    (mean * normal_cdf(z) + sd * normal_pdf(z)).max(0.0)
}

#[cfg(test)]
mod tests {
    //! Every expected figure below was computed independently with scipy 1.17 (python3) and is
    //! written as a literal; the comment above each group gives the python. The shared helpers:
    //!
    //! ```python
    //! from scipy import stats, integrate
    //! import numpy as np
    //! # conversions: Beta(1 + k, 1 + n - k) posteriors, quad over their pdf/cdf
    //! def post(k, n): return stats.beta(1 + k, 1 + n - k)
    //! def quad(f, ds):
    //!     lo = min(d.ppf(1e-15) for d in ds); hi = max(d.isf(1e-15) for d in ds)
    //!     return integrate.quad(f, lo, hi, epsabs=1e-15, epsrel=1e-13, limit=1000,
    //!                           points=sorted(d.mean() for d in ds))[0]
    //! def compare(kA, nA, kB, nB):
    //!     A, B = post(kA, nA), post(kB, nB)
    //!     chance = quad(lambda x: B.pdf(x) * A.cdf(x), (A, B))       # P(pB > pA)
    //!     loss = quad(lambda t: B.cdf(t) * A.sf(t), (A, B))          # E[(pA - pB)+] = ∫ P(pB < t < pA) dt
    //!     loss_control = quad(lambda t: A.cdf(t) * B.sf(t), (A, B))  # E[(pB - pA)+]
    //!     return chance, loss, loss_control, B.mean() - A.mean()
    //! # revenue: an arm of n visitors of whom paid[c] paid c cents (the rest 0)
    //! def arm(n, paid):
    //!     return n, float(sum(c * v for c, v in paid.items())), float(sum(c * c * v for c, v in paid.items()))
    //! def post_mean(n, s, ss): return s / n, (ss - s * s / n) / (n - 1) / n   # mean, s²/n
    //! def compare_revenue(A, B):
    //!     (ma, va), (mb, vb) = post_mean(*A), post_mean(*B); d = mb - ma; sd = np.sqrt(va + vb)
    //!     X = stats.norm(d, sd)   # the posterior of variant - control
    //!     q = lambda f, lo, hi: integrate.quad(f, lo, hi, epsabs=1e-14, epsrel=1e-14, limit=500)[0]
    //!     # E[max(-X, 0)] = ∫_{-∞}^0 P(X < x) dx, E[max(X, 0)] = ∫_0^∞ P(X > x) dx (cut at 40 sd)
    //!     return X.sf(0), q(X.cdf, d - 40 * sd, 0), q(X.sf, 0, d + 40 * sd), d
    //! ```
    //!
    //! The losses computed here use the identity E[(pA - pB)⁺] = m_A·P(A' > B) - m_B·P(A > B');
    //! scipy's use ∫ P(pB < t < pA) dt, a different route to the same number. For the conversion
    //! figures a third route, exact 40-digit sums (Evan Miller's closed form for integer counts),
    //! agrees with scipy's to 4e-14 (chances) and 5e-13 of the value (losses):
    //!
    //! ```python
    //! from mpmath import mp, mpf, beta as B
    //! mp.dps = 40
    //! def greater(aX, bX, aY, bY):   # P(X > Y), X ~ Beta(aX, bX), Y ~ Beta(aY, bY), aX an integer
    //!     t = B(aY, bY + bX) / B(aY, bY); s = mpf(0)
    //!     for i in range(aX):
    //!         s += t; t *= mpf(aY + i) / (aY + bY + bX + i) * mpf(bX + i) / (1 + i)
    //!     return s
    //! def exact(kA, nA, kB, nB):
    //!     aA, bA, aB, bB = 1 + kA, 1 + nA - kA, 1 + kB, 1 + nB - kB
    //!     mA, mB = mpf(aA) / (aA + bA), mpf(aB) / (aB + bB)
    //!     return (greater(aB, bB, aA, bA),
    //!             mA * (1 - greater(aB, bB, aA + 1, bA)) - mB * (1 - greater(aB + 1, bB, aA, bA)),
    //!             mB * greater(aB + 1, bB, aA, bA) - mA * greater(aB, bB, aA + 1, bA))
    //! ```

    use super::*;

    /// |got - want| ≤ absolute + relative·|want|.
    fn assert_close(got: f64, want: f64, absolute: f64, relative: f64) {
        let error = (got - want).abs();
        assert!(
            error <= absolute + relative * want.abs(),
            "got {got:e}, want {want:e} (error {error:e})"
        );
    }

    /// Checks a comparison against scipy's (chance, loss, loss_control, difference): the chance to
    /// 1e-12, the losses to 1e-9 of their value (or 1e-15), the difference to 1e-14.
    fn assert_comparison(got: Comparison, want: [f64; 4]) {
        assert_close(got.chance_to_beat, want[0], 1e-12, 0.0);
        assert_close(got.expected_loss, want[1], 1e-15, 1e-9);
        assert_close(got.expected_loss_control, want[2], 1e-15, 1e-9);
        assert_close(got.difference, want[3], 1e-14, 0.0);
    }

    fn conversion(conversions: u64, visitors: u64) -> Conversion {
        Conversion {
            visitors,
            conversions,
        }
    }

    // compare(0, 10, 1, 10); compare(3, 20, 7, 20)
    #[test]
    fn conversion_small_counts() {
        assert_comparison(
            compare_conversion(conversion(0, 10), conversion(1, 10)),
            [
                0.7619047619047609,
                0.018115942028985508,
                0.10144927536231886,
                0.08333333333333333,
            ],
        );
        assert_comparison(
            compare_conversion(conversion(3, 20), conversion(7, 20)),
            [
                0.9205415546878953,
                0.004801440989756361,
                0.1866196228079382,
                0.18181818181818182,
            ],
        );
    }

    // compare(120, 1000, 150, 1000)
    #[test]
    fn conversion_typical_counts() {
        assert_comparison(
            compare_conversion(conversion(120, 1000), conversion(150, 1000)),
            [
                0.9750678368121419,
                0.00014417785511183244,
                0.03008429761559088,
                0.029940119760479056,
            ],
        );
    }

    // compare(5000, 100000, 5200, 100000); compare(50000, 1000000, 50500, 1000000)
    // compare(0, 1000000, 3, 1000000); compare(500000, 1000000, 500500, 1000000)
    #[test]
    fn conversion_large_counts() {
        assert_comparison(
            compare_conversion(conversion(5000, 100_000), conversion(5200, 100_000)),
            [
                0.9789617174805281,
                7.649001035657624e-06,
                0.0020076090018356424,
                0.001999960000799987,
            ],
        );
        assert_comparison(
            compare_conversion(conversion(50_000, 1_000_000), conversion(50_500, 1_000_000)),
            [
                0.9472097507401064,
                6.875194723609053e-06,
                0.0005068741947256033,
                0.0004999990000019994,
            ],
        );
        assert_comparison(
            compare_conversion(conversion(0, 1_000_000), conversion(3, 1_000_000)),
            [
                0.9375001874998582,
                6.249956250160746e-08,
                3.062493562513572e-06,
                2.9999940000120002e-06,
            ],
        );
        assert_comparison(
            compare_conversion(
                conversion(500_000, 1_000_000),
                conversion(500_500, 1_000_000),
            ),
            [
                0.7602498519436024,
                9.982051981697677e-05,
                0.0005998195198189642,
                0.0004999990000019716,
            ],
        );
    }

    // A small control against a large variant: the variant's narrow posterior must not fall
    // between the integration's points. compare(10, 100, 12000, 100000)
    #[test]
    fn conversion_unequal_sizes() {
        assert_comparison(
            compare_conversion(conversion(10, 100), conversion(12_000, 100_000)),
            [
                0.6792526158035659,
                0.00740083215192289,
                0.01956529474502397,
                0.01216446259310107,
            ],
        );
    }

    // compare(50, 1000, 50, 1000); compare(0, 0, 0, 0) (two uniforms: E[(U - V)+] = 1/6)
    #[test]
    fn conversion_equal_arms() {
        let same = compare_conversion(conversion(50, 1000), conversion(50, 1000));
        assert_comparison(
            same,
            [0.5, 0.0039077924743838996, 0.0039077924743838996, 0.0],
        );
        assert_eq!(same.expected_loss, same.expected_loss_control);
        let empty = compare_conversion(Conversion::default(), Conversion::default());
        assert_comparison(empty, [0.5, 1.0 / 6.0, 1.0 / 6.0, 0.0]);
    }

    // Swapping the arms turns the chance into its complement and swaps the losses, and
    // E[(B - A)+] - E[(A - B)+] = E[B - A] (no python: identities).
    #[test]
    fn conversion_swapped_arms_and_identities() {
        let forward = compare_conversion(conversion(3, 20), conversion(7, 20));
        let back = compare_conversion(conversion(7, 20), conversion(3, 20));
        assert_close(
            back.chance_to_beat,
            1.0 - forward.chance_to_beat,
            1e-12,
            0.0,
        );
        assert_close(
            back.expected_loss,
            forward.expected_loss_control,
            1e-14,
            1e-12,
        );
        assert_close(
            back.expected_loss_control,
            forward.expected_loss,
            1e-14,
            1e-12,
        );
        for (control, variant) in [
            (conversion(0, 10), conversion(1, 10)),
            (conversion(120, 1000), conversion(150, 1000)),
            (conversion(5000, 100_000), conversion(5200, 100_000)),
            (conversion(10, 100), conversion(12_000, 100_000)),
            (conversion(0, 1_000_000), conversion(3, 1_000_000)),
        ] {
            let c = compare_conversion(control, variant);
            assert_close(
                c.expected_loss_control - c.expected_loss,
                c.difference,
                1e-13,
                0.0,
            );
            assert!((0.0..=1.0).contains(&c.chance_to_beat), "{c:?}");
        }
        // More conversions than visitors count as all of them.
        assert_eq!(
            compare_conversion(conversion(12, 10), conversion(1, 10)),
            compare_conversion(conversion(10, 10), conversion(1, 10))
        );
    }

    // [stats.beta.ppf([0.025, 0.975], 1 + k, 1 + n - k) for k, n in
    //  [(0, 10), (120, 1000), (5000, 100000), (0, 0), (1000000, 1000000)]]
    #[test]
    fn conversion_intervals() {
        for (k, n, low, high) in [
            (0, 10, 0.002298972213814267, 0.28491415291815436),
            (120, 1000, 0.10132341964422845, 0.1416269997488508),
            (5000, 100_000, 0.048666639945278665, 0.051368407566739105),
            (0, 0, 0.025, 0.975),
            (1_000_000, 1_000_000, 0.9999963111310387, 0.9999999746822177),
        ] {
            let interval = conversion_interval(conversion(k, n));
            assert_close(interval.low, low, 1e-14, 1e-12);
            assert_close(interval.high, high, 1e-14, 1e-12);
        }
    }

    /// The python `arm(2000, {2000: 60, 100: 40})` and `arm(2000, {2000: 75, 100: 30})`: two
    /// thousand visitors, a few paying 20 € or 1 €.
    fn revenue_pair() -> (Revenue, Revenue) {
        (
            Revenue {
                visitors: 2000,
                sum: 124_000.0,
                sum_squares: 240_400_000.0,
            },
            Revenue {
                visitors: 2000,
                sum: 153_000.0,
                sum_squares: 300_300_000.0,
            },
        )
    }

    // A, B = arm(2000, {2000: 60, 100: 40}), arm(2000, {2000: 75, 100: 30}); compare_revenue(A, B)
    // C = arm(20000, {2000: 600, 100: 400, -2000: 10}); D = arm(20000, {2000: 540, 100: 420, -2000: 12})
    // compare_revenue(C, D)   (refunds as negative net cents)
    #[test]
    fn revenue_comparisons() {
        let (a, b) = revenue_pair();
        assert_comparison(
            compare_revenue(a, b),
            [
                0.8979257514952809,
                0.554142582839277,
                15.054142582839278,
                14.5,
            ],
        );
        let c = Revenue {
            visitors: 20_000,
            sum: 1_220_000.0,
            sum_squares: 2_444_000_000.0,
        };
        let d = Revenue {
            visitors: 20_000,
            sum: 1_098_000.0,
            sum_squares: 2_212_200_000.0,
        };
        assert_comparison(
            compare_revenue(c, d),
            [
                0.03481622110106859,
                6.146297292312174,
                0.04629729231217369,
                -6.100000000000001,
            ],
        );
    }

    // Visitor by visitor, `add` gives the sums the python's arm() gives.
    #[test]
    fn revenue_add_and_mean() {
        let mut built = Revenue::default();
        assert_eq!(built.mean(), 0.0);
        for i in 0..2000 {
            built.add(match i {
                0..60 => 2000.0,
                60..100 => 100.0,
                _ => 0.0,
            });
        }
        assert_eq!(built, revenue_pair().0);
        assert_eq!(built.mean(), 62.0);
    }

    // Degenerate arms give no NaN and never a side (no python: the rule of compare_revenue).
    #[test]
    fn revenue_without_information() {
        let none = compare_revenue(Revenue::default(), Revenue::default());
        assert_eq!(
            none,
            Comparison {
                chance_to_beat: 0.5,
                expected_loss: 0.0,
                expected_loss_control: 0.0,
                difference: 0.0
            }
        );
        let mut one = Revenue::default();
        one.add(500.0);
        let (a, _) = revenue_pair();
        let single = compare_revenue(a, one);
        assert_eq!(single.chance_to_beat, 0.5);
        assert_eq!(single.expected_loss, 0.0);
        assert_eq!(single.expected_loss_control, 438.0);
        let zeros = Revenue {
            visitors: 3000,
            sum: 0.0,
            sum_squares: 0.0,
        };
        assert_eq!(compare_revenue(zeros, zeros).chance_to_beat, 0.5);
        assert_eq!(compare_revenue(zeros, zeros).expected_loss, 0.0);
        // Against an arm without spread the other's spread still decides: N(62, s²/n) against 0.
        let against_zeros = compare_revenue(zeros, a);
        assert!(
            against_zeros.chance_to_beat > 0.999_999,
            "{against_zeros:?}"
        );
    }

    // for A in (arm(2000, {2000: 60, 100: 40}), arm(20000, {2000: 600, 100: 400, -2000: 10})):
    //     m, v = post_mean(*A); stats.norm.interval(0.95, loc=m, scale=np.sqrt(v))
    #[test]
    fn revenue_intervals() {
        let interval = revenue_interval(revenue_pair().0);
        assert_close(interval.low, 47.046733087180385, 1e-12, 0.0);
        assert_close(interval.high, 76.95326691281961, 1e-12, 0.0);
        let interval = revenue_interval(Revenue {
            visitors: 20_000,
            sum: 1_220_000.0,
            sum_squares: 2_444_000_000.0,
        });
        assert_close(interval.low, 56.22949186477537, 1e-12, 0.0);
        assert_close(interval.high, 65.77050813522463, 1e-12, 0.0);
        let mut one = Revenue::default();
        one.add(700.0);
        assert_eq!(
            revenue_interval(one),
            Interval {
                low: 700.0,
                high: 700.0
            }
        );
    }

    // for obs, w in [([5000, 5000], [1, 1]), ([5000, 5200], [1, 1]), ([1000, 1300, 1000], [1, 1, 1]),
    //                ([3000, 1000], [3, 1]), ([3000, 1100], [3, 1]), ([2600, 2400, 2500, 2500], [1, 1, 1, 1])]:
    //     obs = np.array(obs, float); w = np.array(w, float)
    //     stats.chisquare(obs, f_exp=obs.sum() * w / w.sum()).pvalue   # the same as chi2.sf(x², k - 1)
    #[test]
    fn sample_ratio_mismatch() {
        assert_eq!(srm_p_value(&[5000, 5000], &[1.0, 1.0]), 1.0);
        assert_close(
            srm_p_value(&[5000, 5200], &[1.0, 1.0]),
            0.0476703806561615,
            1e-15,
            1e-12,
        );
        let skewed = srm_p_value(&[1000, 1300, 1000], &[1.0, 1.0, 1.0]);
        assert_close(skewed, 1.4308860148391174e-12, 0.0, 1e-10);
        assert!(skewed < SRM_THRESHOLD);
        assert_close(srm_p_value(&[3000, 1000], &[3.0, 1.0]), 1.0, 1e-15, 0.0);
        assert_close(
            srm_p_value(&[3000, 1100], &[3.0, 1.0]),
            0.006830255863044081,
            1e-15,
            1e-12,
        );
        assert_close(
            srm_p_value(&[2600, 2400, 2500, 2500], &[1.0; 4]),
            0.04601170568923136,
            1e-15,
            1e-12,
        );
        // Nothing to test: no arms, one arm, no visitors, no weight.
        assert_eq!(srm_p_value(&[], &[]), 1.0);
        assert_eq!(srm_p_value(&[500], &[1.0]), 1.0);
        assert_eq!(srm_p_value(&[0, 0], &[1.0, 1.0]), 1.0);
        assert_eq!(srm_p_value(&[10, 10], &[0.0, 0.0]), 1.0);
        // Visitors in an arm meant to get none.
        assert_eq!(srm_p_value(&[100, 3], &[1.0, 0.0]), 0.0);
        assert_eq!(srm_p_value(&[100, 0], &[1.0, 0.0]), 1.0);
    }

    // stats.norm.cdf([-30, -8, -5, -1.5, 0, 0.3, 1.959963984540054, 6])
    #[test]
    fn normal_cdf_figures() {
        for (z, want) in [
            (-30.0, 4.906713927147908e-198),
            (-8.0, 6.22096057427174e-16),
            (-5.0, 2.866515718791933e-07),
            (-1.5, 0.06680720126885807),
            (0.0, 0.5),
            (0.3, 0.6179114221889526),
            (Z_975, 0.975),
            (6.0, 0.9999999990134123),
        ] {
            assert_close(normal_cdf(z), want, 1e-16, 1e-13);
        }
    }

    fn rule() -> Rule {
        Rule {
            min_exposures: 1000,
            min_days: 7,
            chance: 0.95,
            max_loss: 0.002,
        }
    }

    fn comparison(
        chance_to_beat: f64,
        expected_loss: f64,
        expected_loss_control: f64,
    ) -> Comparison {
        Comparison {
            chance_to_beat,
            expected_loss,
            expected_loss_control,
            difference: expected_loss_control - expected_loss,
        }
    }

    #[test]
    fn decide_collecting() {
        let clear = [comparison(0.999, 0.0, 0.01)];
        assert_eq!(
            decide(&rule(), 9, &[1200, 640], &clear),
            Decision::Collecting {
                exposures_needed: 360,
                days_needed: 0
            }
        );
        assert_eq!(
            decide(&rule(), 3, &[5000, 5000], &clear),
            Decision::Collecting {
                exposures_needed: 0,
                days_needed: 4
            }
        );
        assert_eq!(
            decide(&rule(), 0, &[0, 10, 20], &clear),
            Decision::Collecting {
                exposures_needed: 1000,
                days_needed: 7
            }
        );
    }

    #[test]
    fn decide_variant_wins() {
        let exposures = [1000, 1000, 1000, 1000];
        // Arm 1 clears the rule, arm 2 has the higher chance but too large a loss, arm 3 the
        // highest chance that clears it.
        let comparisons = [
            comparison(0.96, 0.001, 0.02),
            comparison(0.995, 0.002, 0.03),
            comparison(0.97, 0.0005, 0.025),
        ];
        assert_eq!(
            decide(&rule(), 7, &exposures, &comparisons),
            Decision::Winner { arm: 3 }
        );
        // A tie goes to the lower arm.
        let tie = [comparison(0.97, 0.001, 0.02), comparison(0.97, 0.001, 0.02)];
        assert_eq!(
            decide(&rule(), 7, &exposures[..3], &tie),
            Decision::Winner { arm: 1 }
        );
        // The chance exactly at the rule's is enough.
        assert_eq!(
            decide(
                &rule(),
                8,
                &exposures[..2],
                &[comparison(0.95, 0.0019, 0.01)]
            ),
            Decision::Winner { arm: 1 }
        );
    }

    #[test]
    fn decide_control_wins() {
        let exposures = [1500, 1400, 1450];
        let comparisons = [
            comparison(0.02, 0.01, 0.0004),
            comparison(0.05, 0.008, 0.0019),
        ];
        assert_eq!(
            decide(&rule(), 10, &exposures, &comparisons),
            Decision::Winner { arm: 0 }
        );
    }

    #[test]
    fn decide_undecided() {
        let exposures = [1500, 1400, 1450];
        let rule = rule();
        // Neither side is likely enough.
        let unsure = [comparison(0.7, 0.003, 0.01)];
        assert_eq!(
            decide(&rule, 10, &exposures[..2], &unsure),
            Decision::Undecided
        );
        // Likely enough but too much at stake.
        let risky = [comparison(0.97, 0.0025, 0.02)];
        assert_eq!(
            decide(&rule, 10, &exposures[..2], &risky),
            Decision::Undecided
        );
        let risky_control = [comparison(0.03, 0.02, 0.002)];
        assert_eq!(
            decide(&rule, 10, &exposures[..2], &risky_control),
            Decision::Undecided
        );
        // The control needs every variant behind it.
        let one_behind = [
            comparison(0.02, 0.01, 0.0004),
            comparison(0.5, 0.004, 0.004),
        ];
        assert_eq!(
            decide(&rule, 10, &exposures, &one_behind),
            Decision::Undecided
        );
        // Without a variant there is nothing to decide.
        assert_eq!(decide(&rule, 10, &exposures[..1], &[]), Decision::Undecided);
    }

    // The decision as the operator's page receives it.
    #[test]
    fn decision_json() {
        let json = |d: Decision| serde_json::to_value(d).expect("serializes");
        assert_eq!(
            json(Decision::Collecting {
                exposures_needed: 20,
                days_needed: 3
            }),
            serde_json::json!({"state": "collecting", "exposuresNeeded": 20, "daysNeeded": 3})
        );
        assert_eq!(
            json(Decision::Undecided),
            serde_json::json!({"state": "undecided"})
        );
        assert_eq!(
            json(Decision::Winner { arm: 2 }),
            serde_json::json!({"state": "winner", "arm": 2})
        );
    }
}
