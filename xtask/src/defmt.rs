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

use defmt_decoder::{DecodeError, Encoding, Frame, Table};
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
/// error's to `err`. Fails on a frame that does not decode, or (rzCOBS, which ends every
/// frame with a zero byte) on a cut last frame, naming how many frames decoded first.
pub fn decode(elf: &[u8], frames: &[u8], out: &mut dyn Write, err: &mut dyn Write) -> Result<usize, String> {
    let table = Table::parse(elf).map_err(|e| e.to_string())?.ok_or("the ELF has no .defmt section")?;
    decode_with(&table, frames, out, err)
}

/// [`decode`] with a parsed table.
fn decode_with(
    table: &Table,
    frames: &[u8],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<usize, String> {
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
            Err(DecodeError::UnexpectedEof) => {
                if table.encoding() == Encoding::Rzcobs && frames.last().is_some_and(|&b| b != 0) {
                    return Err(format!(
                        "the stream ends inside frame {} (after {count} decoded)",
                        count + 1
                    ));
                }
                break;
            }
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
    use defmt_decoder::Table;

    use super::{decode_with, float_text};

    fn shown(shown: &str, is_f32: bool, result: bool) -> String {
        let mut s = String::new();
        float_text(&mut s, shown, is_f32, result);
        s
    }

    /// What the host prints for `x`: `{:.6}` for prints, C's `%.6e` for results.
    fn host(x: f64, result: bool) -> String {
        let mut c = String::new();
        if result {
            hostrt_core::driver::write_c_exp(&mut c, x).unwrap();
        } else {
            c = format!("{x:.6}");
        }
        c
    }

    #[test]
    fn floats_print_as_the_host_driver_prints_them() {
        // The decoder's text for each value is ryu's shortest form ("1e30", "-0.0", "5e-324").
        let f64s = [(1.5, "1.5"), (-0.1, "-0.1"), (1e30, "1e30"), (-0.0, "-0.0"), (5e-324, "5e-324")];
        let f32s = [(0.1f32, "0.1"), (6.338253e29, "6.338253e29"), (1e-45, "1e-45"), (-0.0, "-0.0")];
        for result in [false, true] {
            for (x, text) in f64s {
                assert_eq!(shown(text, false, result), host(x, result), "{text}");
            }
            for (x, text) in f32s {
                assert_eq!(shown(text, true, result), host(f64::from(x), result), "{text}");
            }
        }
        assert_eq!(shown("-inf", false, false), "-inf");
        assert_eq!(shown("inf", true, true), "INF");
        assert_eq!(shown("NaN", false, true), "nan");
    }

    /// A raw-encoded table: 1 and 2 are `println!` pieces, 3 an error line.
    fn table() -> Table {
        let entry = |tag: &str, s: &str| serde_json::json!({"string": {"tag": tag, "string": s}, "raw_symbol": "<test>"});
        serde_json::from_value(serde_json::json!({
            "timestamp": null,
            "entries": {
                "1": entry("Println", "'{=str}' returned "),
                "2": entry("Println", "{=f32:?},{=i32}\n"),
                "3": entry("Error", "{=str}: runtime error\n"),
            },
            "bitflags": {},
            "encoding": "Raw",
        }))
        .unwrap()
    }

    #[test]
    fn frames_join_into_lines_and_split_by_level() {
        // Raw frames: a u16 index, then the arguments (a str as a u32 length and its bytes).
        let mut frames = vec![1, 0, 1, 0, 0, 0, b'f'];
        frames.extend([2, 0]);
        frames.extend(2.5f32.to_le_bytes());
        frames.extend((-7i32).to_le_bytes());
        frames.extend([3, 0, 3, 0, 0, 0, b'a', b':', b'1']);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        assert_eq!(decode_with(&table(), &frames, &mut out, &mut err), Ok(3));
        assert_eq!(String::from_utf8(out).unwrap(), "'f' returned 2.500000e+00,-7\n");
        assert_eq!(String::from_utf8(err).unwrap(), "a:1: runtime error\n");
        // An unknown index is a malformed frame, named.
        let e = decode_with(&table(), &[9, 0], &mut Vec::new(), &mut Vec::new()).unwrap_err();
        assert!(e.contains("frame 1 is malformed"), "{e}");
    }
}
