//! Python-compatible number and text formatting.
//!
//! The reference implementation is Python, and its output formats are part of the
//! contract: floats print as `repr` does (`1.0`, `0.14`, `1e+16`), `round` rounds the
//! exact binary value half-to-even, `%g` drops trailing zeros, error messages quote
//! values the way `repr(str)` does, and JSON is written the way `json.dumps` writes it.
//! Everything of that kind lives here so the rest of the crate never formats a float
//! with Rust's own `{}` (which prints `1` for `1.0`).

use serde_json::Value;
use std::fmt::Write as _;

/// `repr(float)`: the shortest string that round-trips, with at least one decimal,
/// switching to exponent form below 1e-4 and from 1e16 on.
pub fn float_repr(x: f64) -> String {
    let mut out = String::new();
    push_float_repr(&mut out, x);
    out
}

/// Append `repr(x)` to `out`.
pub fn push_float_repr(out: &mut String, x: f64) {
    // Between 1e-4 and 1e16 Rust's shortest round-trip Display is Python's repr,
    // except that Python keeps a `.0` on integral values.
    let magnitude = x.abs();
    if x.is_finite() && (1e-4..1e16).contains(&magnitude) {
        let start = out.len();
        let _ = write!(out, "{x}");
        if !out[start..].contains('.') {
            out.push_str(".0");
        }
        return;
    }
    out.push_str(&float_repr_slow(x));
}

fn float_repr_slow(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    // `{:e}` gives the shortest round-trip digits: "d.ddde<exp>".
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    out
}

/// `round(x, ndigits)` for floats: the exact binary value rounded half-to-even.
/// Rust's fixed-precision formatting rounds the exact value the same way.
pub fn round_to(x: f64, ndigits: usize) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.ndigits$}").parse().unwrap_or(x)
}

/// `round(x)` with no digits: the nearest integer, ties to even.
pub fn round_int(x: f64) -> i64 {
    x.round_ties_even() as i64
}

/// `'%g' % x`: six significant digits, trailing zeros dropped.
pub fn g_format(x: f64) -> String {
    if !x.is_finite() {
        return float_repr(x);
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    const PRECISION: i32 = 6;
    let sci = format!("{:.*e}", (PRECISION - 1) as usize, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..PRECISION).contains(&exp) {
        let mantissa = strip_fraction_zeros(mantissa);
        format!(
            "{mantissa}e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    } else {
        let decimals = (PRECISION - 1 - exp).max(0) as usize;
        strip_fraction_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn strip_fraction_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// `repr(str)`: how Python quotes a string in its messages.
pub fn repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c => {
                let cp = c as u32;
                if cp < 0x100 {
                    let _ = write!(out, "\\x{cp:02x}");
                } else if cp < 0x10000 {
                    let _ = write!(out, "\\u{cp:04x}");
                } else {
                    let _ = write!(out, "\\U{cp:08x}");
                }
            }
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable` for one character, covering the categories that occur
/// in practice (controls, separators, format characters, private use, noncharacters).
/// Unassigned code points are treated as printable: the table would be large and the
/// only consumer is the quoting of rejected identifiers in error messages.
fn is_printable(c: char) -> bool {
    let cp = c as u32;
    !matches!(cp,
        0x00..=0x1F | 0x7F..=0xA0 | 0xAD
        | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x890..=0x891 | 0x8E2 | 0x1680 | 0x180E
        | 0x2000..=0x200F | 0x2028..=0x202F | 0x205F..=0x2064 | 0x2066..=0x206F
        | 0x3000 | 0xD800..=0xF8FF | 0xFDD0..=0xFDEF | 0xFEFF | 0xFFF9..=0xFFFB
        | 0xFFFE..=0xFFFF | 0x110BD | 0x110CD | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3
        | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F | 0xF0000..=0x10FFFF)
        && (cp & 0xFFFE) != 0xFFFE
}

/// How JSON text is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonStyle {
    /// `None`: one line; `Some(n)`: one member per line, `n` spaces per level.
    pub indent: Option<usize>,
    /// Escape every non-ASCII character as `\uXXXX` (Python's default).
    pub ensure_ascii: bool,
    /// One-line output without spaces after `,` and `:`.
    pub compact: bool,
}

impl JsonStyle {
    /// `json.dump(obj, indent=n)`: the reference's graph, sessions and counter files.
    pub const fn file(indent: usize) -> Self {
        JsonStyle {
            indent: Some(indent),
            ensure_ascii: true,
            compact: false,
        }
    }
    /// `separators=(",", ":"), ensure_ascii=False`: REST response bodies.
    pub const WIRE: JsonStyle = JsonStyle {
        indent: None,
        ensure_ascii: false,
        compact: true,
    };
}

/// Serialise a JSON value exactly as Python's `json.dumps` would with `style`.
pub fn to_json(value: &Value, style: JsonStyle) -> String {
    let mut out = String::new();
    write_json(&mut out, value, style, 0);
    out
}

/// Append the JSON text of `value` to `out` (see [`to_json`]).
pub fn write_json(out: &mut String, value: &Value, style: JsonStyle, depth: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_json_str(out, s, style.ensure_ascii),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_separator(style));
                }
                newline_indent(out, style, depth + 1);
                write_json(out, item, style, depth + 1);
            }
            newline_indent(out, style, depth);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_separator(style));
                }
                newline_indent(out, style, depth + 1);
                write_json_str(out, key, style.ensure_ascii);
                out.push_str(if style.compact { ":" } else { ": " });
                write_json(out, item, style, depth + 1);
            }
            newline_indent(out, style, depth);
            out.push('}');
        }
    }
}

fn item_separator(style: JsonStyle) -> &'static str {
    if style.indent.is_some() || style.compact {
        ","
    } else {
        ", "
    }
}

fn newline_indent(out: &mut String, style: JsonStyle, depth: usize) {
    if let Some(width) = style.indent {
        out.push('\n');
        push_spaces(out, width * depth);
    }
}

/// Append `n` spaces without allocating.
pub fn push_spaces(out: &mut String, mut n: usize) {
    const SPACES: &str = "                                                                ";
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
}

fn write_number(out: &mut String, n: &serde_json::Number) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else if let Some(f) = n.as_f64() {
        if f.is_finite() {
            push_float_repr(out, f);
        } else {
            out.push_str(&json_float(f));
        }
    }
}

/// A float as `json.dumps` writes it (`Infinity`/`NaN` for the non-finite values).
pub fn json_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_string()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        float_repr(f)
    }
}

/// A JSON string literal with Python's escaping rules.
pub fn write_json_str(out: &mut String, s: &str, ensure_ascii: bool) {
    write_json_str_of(out, &[s], ensure_ascii);
}

/// One JSON string literal of the concatenation of `parts`, without building it first
/// (escaping works character by character, so escaping the parts one after the other
/// is escaping the whole).
pub fn write_json_str_of(out: &mut String, parts: &[&str], ensure_ascii: bool) {
    out.push('"');
    for part in parts {
        push_escaped(out, part, ensure_ascii);
    }
    out.push('"');
}

fn push_escaped(out: &mut String, s: &str, ensure_ascii: bool) {
    let bytes = s.as_bytes();
    let needs_escape = |b: u8| b < 0x20 || b == b'"' || b == b'\\' || (ensure_ascii && b >= 0x7F);
    // Nearly every key and value in a graph file is plain text: test it in one pass.
    if !bytes.iter().any(|&b| needs_escape(b)) {
        out.push_str(s);
        return;
    }
    // Copy runs of characters that need no escaping in one go.
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if !needs_escape(bytes[i]) {
            i += 1;
            continue;
        }
        // Every byte that starts an escape is ASCII or a UTF-8 lead byte, so `i` is a
        // char boundary.
        out.push_str(&s[start..i]);
        let c = s[i..].chars().next().unwrap_or('\u{fffd}');
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
        i += c.len_utf8();
        start = i;
    }
    out.push_str(&s[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (0.14, "0.14"),
            (1795993955.0717223, "1795993955.0717223"),
            (1e16, "1e+16"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (-2.5, "-2.5"),
            (0.30000000000000004, "0.30000000000000004"),
            (1795176000.0, "1795176000.0"),
        ];
        for (x, want) in cases {
            assert_eq!(float_repr(x), want, "{x}");
        }
    }

    #[test]
    fn rounding_is_half_even_on_the_binary_value() {
        assert_eq!(round_to(2.25, 1), 2.2);
        assert_eq!(round_to(2.675, 2), 2.67);
        assert_eq!(round_to(0.375, 2), 0.38);
        assert_eq!(round_int(12.5), 12);
        assert_eq!(round_int(13.5), 14);
        assert_eq!(float_repr(round_to(97.0 / 76.0, 1)), "1.3");
    }

    #[test]
    fn percent_g_drops_trailing_zeros() {
        assert_eq!(g_format(14.0), "14");
        assert_eq!(g_format(3.5), "3.5");
        assert_eq!(g_format(32.9), "32.9");
        assert_eq!(g_format(2.0), "2");
        assert_eq!(g_format(1234567.0), "1.23457e+06");
        assert_eq!(g_format(0.00001), "1e-05");
    }

    #[test]
    fn repr_quotes_like_python() {
        assert_eq!(repr_str("bad id!"), "'bad id!'");
        assert_eq!(repr_str("a'b"), "\"a'b\"");
        assert_eq!(repr_str("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(repr_str("x\ny\\"), "'x\\ny\\\\'");
        assert_eq!(repr_str("é<>"), "'é<>'");
        assert_eq!(repr_str("\u{7}"), "'\\x07'");
        assert_eq!(repr_str("\u{200b}"), "'\\u200b'");
    }

    #[test]
    fn json_matches_python_dumps() {
        let v = json!({"a": [1, 2.0, "é—"], "b": {}, "c": [], "d": null});
        assert_eq!(
            to_json(&v, JsonStyle::file(2)),
            "{\n  \"a\": [\n    1,\n    2.0,\n    \"\\u00e9\\u2014\"\n  ],\n  \"b\": {},\n  \"c\": [],\n  \"d\": null\n}"
        );
        assert_eq!(
            to_json(&v, JsonStyle::WIRE),
            "{\"a\":[1,2.0,\"é—\"],\"b\":{},\"c\":[],\"d\":null}"
        );
        assert_eq!(
            to_json(&json!("😀"), JsonStyle::file(1)),
            "\"\\ud83d\\ude00\""
        );
    }
}
