//! `cargo xtask defmt ELF [FRAMES]`: decode the defmt frames a firmware image wrote (a file,
//! or standard input) with the format strings of its ELF, and print them as hostrt's text:
//! frames without a level (`defmt::println!`, the print kernels and the test driver) to
//! standard output, frames with one (diagnostics, the image's own reports) to standard error.
//!
//! hostrt's frames are pieces of lines: each carries its own `\n` where the host's text has
//! one, and pieces are joined as they come. Numbers print as `hostrt run` prints them: a float
//! parameter as C's `%f` (six decimals), or as C's `%.6e` with the `:?` hint (the driver's
//! results); see docs/porting.md, "Output without core::fmt".

use std::fmt::Write as _;
use std::io::{Read, Write};

use defmt_decoder::{DecodeError, Frame, Table};
use defmt_parser::{DisplayHint, Fragment, Type};

/// The text of one frame as hostrt's host side prints it.
pub fn frame_text(frame: &Frame<'_>) -> String {
    let mut text = String::new();
    for (fragment, shown) in frame.fragments().iter().zip(frame.display_fragments()) {
        match fragment {
            Fragment::Parameter(p) if matches!(p.ty, Type::F32 | Type::F64) => {
                float_text(&mut text, &shown, p.ty == Type::F32, p.hint == Some(DisplayHint::Debug));
            }
            _ => text.push_str(&shown),
        }
    }
    text
}

/// A float parameter as hostrt's host side prints it, from the decoder's text for it (its
/// shortest round-trip form, so parsing gives the value back exactly; an `f32` widens
/// exactly, as on the host): C's `%.6e` for the driver's results (`:?` hint), else `%f`.
fn float_text(text: &mut String, shown: &str, is_f32: bool, result: bool) {
    let x: f64 = if is_f32 {
        shown.parse::<f32>().map(f64::from).unwrap_or(f64::NAN)
    } else {
        shown.parse().unwrap_or(f64::NAN)
    };
    if result {
        let _ = hostrt_core::driver::write_c_exp(text, x);
    } else {
        let _ = write!(text, "{x:.6}");
    }
}

/// Decode `frames` with `elf`'s table, writing standard output's text to `out` and standard
/// error's to `err`. Fails on a frame that does not decode, or on bytes left over at the end
/// (a cut stream), naming how many frames decoded first.
pub fn decode(elf: &[u8], frames: &[u8], out: &mut dyn Write, err: &mut dyn Write) -> Result<usize, String> {
    let table = Table::parse(elf).map_err(|e| e.to_string())?.ok_or("the ELF has no .defmt section")?;
    let mut decoder = table.new_stream_decoder();
    decoder.received(frames);
    let mut count = 0;
    loop {
        match decoder.decode() {
            Ok(frame) => {
                let text = frame_text(&frame);
                let written = match frame.level() {
                    Some(_) => err.write_all(text.as_bytes()),
                    None => out.write_all(text.as_bytes()),
                };
                written.map_err(|e| e.to_string())?;
                count += 1;
            }
            Err(DecodeError::UnexpectedEof) => break,
            Err(DecodeError::Malformed) => {
                return Err(format!("frame {} is malformed (after {count} decoded)", count + 1));
            }
        }
    }
    Ok(count)
}

/// The subcommand: `args` are the ELF and, optionally, the file of frames.
pub fn run(args: &[String]) -> Result<(), String> {
    let [elf, rest @ ..] = args else {
        return Err("usage: cargo xtask defmt ELF [FRAMES]".into());
    };
    let elf = std::fs::read(elf).map_err(|e| format!("{elf}: {e}"))?;
    let frames = match rest {
        [] => {
            let mut v = Vec::new();
            std::io::stdin().read_to_end(&mut v).map_err(|e| format!("standard input: {e}"))?;
            v
        }
        [f] => std::fs::read(f).map_err(|e| format!("{f}: {e}"))?,
        _ => return Err("usage: cargo xtask defmt ELF [FRAMES]".into()),
    };
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
    decode(&elf, &frames, &mut stdout.lock(), &mut stderr.lock()).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::float_text;

    fn shown(shown: &str, is_f32: bool, result: bool) -> String {
        let mut s = String::new();
        float_text(&mut s, shown, is_f32, result);
        s
    }

    #[test]
    fn floats_print_as_the_host_driver_prints_them() {
        // What `{:.6}` and `write_c_exp` make of the value the text stands for.
        for (x, is_f32) in [(1.5f64, false), (-0.1, false), (1e30, false), (f64::from(6.338253e29f32), true)]
        {
            let text = if is_f32 { format!("{}", x as f32) } else { format!("{x}") };
            assert_eq!(shown(&text, is_f32, false), format!("{x:.6}"));
            let mut c = String::new();
            hostrt_core::driver::write_c_exp(&mut c, x).unwrap();
            assert_eq!(shown(&text, is_f32, true), c);
        }
        assert_eq!(shown("0.1", true, false), format!("{:.6}", f64::from(0.1f32)));
        assert_eq!(shown("-inf", false, false), "-inf");
        assert_eq!(shown("inf", true, true), "INF");
        assert_eq!(shown("NaN", false, true), "nan");
    }
}
