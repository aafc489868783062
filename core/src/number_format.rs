//! Numbers as TFRT's C++ prints them (`printf`'s `%.6e`), for the test driver's results and
//! printed tensors alike.

use core::fmt::{self, Write};

use crate::diagnostic::FixedStr;

/// C's `%.6e` (`1.000000e+00`, `-2.500000e-01`, `nan`, `INF`).
pub fn write_c_exp(out: &mut dyn Write, x: f64) -> fmt::Result {
    if x.is_nan() {
        return out.write_str("nan");
    }
    if x.is_infinite() {
        return out.write_str(if x > 0.0 { "INF" } else { "-INF" });
    }
    let mut s: FixedStr<40> = FixedStr::new("", false);
    write!(s, "{x:.6e}")?;
    let (mantissa, exp) = s.as_str().split_once('e').unwrap_or((s.as_str(), "0"));
    let e: i32 = exp.parse().unwrap_or(0);
    write!(out, "{mantissa}e{}{:02}", if e < 0 { '-' } else { '+' }, e.unsigned_abs())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::String;

    use super::write_c_exp;

    fn c(x: f64) -> String {
        let mut s = String::new();
        write_c_exp(&mut s, x).unwrap();
        s
    }

    #[test]
    fn c_style_exponents() {
        assert_eq!(c(1.0), "1.000000e+00");
        assert_eq!(c(-0.25), "-2.500000e-01");
        assert_eq!(c(123456.0), "1.234560e+05");
        assert_eq!(c(1e-300), "1.000000e-300");
        assert_eq!(c(f64::NAN), "nan");
        assert_eq!(c(f64::NEG_INFINITY), "-INF");
    }
}
