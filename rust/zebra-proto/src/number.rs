//! How gradient values travel and are summed.
//!
//! The wire and the switch registers hold 32-bit raw values; a job's
//! [`NumberMode`] says what they mean. `F32` is the software switch's exact
//! mode (IEEE addition, as vanilla PS-lite does at the server). `Fixed` is
//! the Tofino mode: the switch has no float adder, so values travel as i32
//! scaled by `2^frac_bits` and the switch adds integers (saturating, as the
//! `|+|` of a P4 RegisterAction). Integer-valued gradients whose sums stay in
//! range are exact in both modes.

/// The number format of one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberMode {
    /// IEEE-754 single precision, summed as floats.
    F32,
    /// Two's-complement i32 with `frac_bits` fraction bits, summed as integers.
    Fixed {
        /// Scale exponent: a value `v` travels as `round(v * 2^frac_bits)`.
        frac_bits: u8,
    },
}

/// Largest fraction bit count a fixed-point job may use.
pub const MAX_FRAC_BITS: u8 = 30;

impl NumberMode {
    /// Whether values are fixed point (the FIXED wire flag).
    pub const fn is_fixed(self) -> bool {
        matches!(self, NumberMode::Fixed { .. })
    }

    fn scale(frac_bits: u8) -> f64 {
        f64::from(1u32 << frac_bits)
    }

    /// Converts a gradient value to its raw register form. Fixed point
    /// rounds to nearest and saturates at the i32 range.
    pub fn encode(self, v: f32) -> u32 {
        match self {
            NumberMode::F32 => v.to_bits(),
            NumberMode::Fixed { frac_bits } => {
                let x = (f64::from(v) * Self::scale(frac_bits)).round();
                let clamped = x.clamp(f64::from(i32::MIN), f64::from(i32::MAX));
                // NaN clamps to NaN; `as` turns it into 0.
                (clamped as i32) as u32
            }
        }
    }

    /// Converts a raw register value back to a gradient value.
    pub fn decode(self, raw: u32) -> f32 {
        match self {
            NumberMode::F32 => f32::from_bits(raw),
            NumberMode::Fixed { frac_bits } => {
                (f64::from(raw as i32) / Self::scale(frac_bits)) as f32
            }
        }
    }

    /// Adds two raw values; the flag says a fixed-point sum saturated.
    pub fn add(self, a: u32, b: u32) -> (u32, bool) {
        match self {
            NumberMode::F32 => ((f32::from_bits(a) + f32::from_bits(b)).to_bits(), false),
            NumberMode::Fixed { .. } => {
                let (a, b) = (a as i32, b as i32);
                match a.checked_add(b) {
                    Some(s) => (s as u32, false),
                    None => (a.saturating_add(b) as u32, true),
                }
            }
        }
    }

    /// Subtracts raw `b` from raw `a` (used by the server to correct an
    /// aggregate for fallback pairs it has already applied).
    pub fn sub(self, a: u32, b: u32) -> u32 {
        match self {
            NumberMode::F32 => (f32::from_bits(a) - f32::from_bits(b)).to_bits(),
            NumberMode::Fixed { .. } => (a as i32).saturating_sub(b as i32) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_round_trips_and_adds() {
        let m = NumberMode::F32;
        assert_eq!(m.decode(m.encode(1.5)), 1.5);
        let (s, sat) = m.add(m.encode(1.5), m.encode(-4.0));
        assert_eq!((m.decode(s), sat), (-2.5, false));
        assert_eq!(m.decode(m.sub(s, m.encode(-4.0))), 1.5);
    }

    #[test]
    fn fixed_is_exact_for_integers_and_saturates() {
        let m = NumberMode::Fixed { frac_bits: 16 };
        assert_eq!(m.decode(m.encode(-7.0)), -7.0);
        assert_eq!(m.decode(m.encode(0.25)), 0.25);
        let (s, sat) = m.add(m.encode(3.0), m.encode(-10.0));
        assert_eq!((m.decode(s), sat), (-7.0, false));
        let big = m.encode(30000.0);
        let (s, sat) = m.add(big, big);
        assert!(sat);
        assert_eq!(s as i32, i32::MAX);
        assert_eq!(m.encode(1e12), i32::MAX as u32);
        assert_eq!(m.encode(f32::NAN), 0);
    }
}
