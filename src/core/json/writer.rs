//! A compact JSON writer producing exactly the bytes serde_json's compact serializer wrote
//! (same string escapes, same shortest float form), so records written by earlier builds and
//! by this one read the same and digests of frozen bodies never move.

use serde_json::{Number, Value};

/// Writes one JSON text into a string.
#[derive(Default)]
pub struct Writer {
    out: String,
    /// Per open container: whether a member was written (so the next one needs a comma).
    written: Vec<bool>,
    /// A key was just written: the next value is its value, not a new member.
    after_key: bool,
    /// An integer beyond ±(2^53 - 1) was written: JS would read it back changed.
    beyond_js: bool,
    /// JSON text was written as it came ([`Writer::raw`]): its numbers were not looked at.
    raw: bool,
}

/// Largest integer a JS number holds exactly.
const MAX_SAFE: u64 = (1 << 53) - 1;

impl Writer {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// The text written.
    pub fn finish(self) -> String {
        self.out
    }

    /// The text written so far.
    pub fn text(&self) -> &str {
        &self.out
    }

    /// Whether an integer beyond ±(2^53 - 1) was written (the browser layer refuses such
    /// text: it would not come back unchanged through `JSON.parse`).
    pub fn beyond_js(&self) -> bool {
        self.beyond_js
    }

    /// Whether JSON text was written as it came ([`Writer::raw`]), whose integers only a scan
    /// of the text finds.
    pub fn wrote_raw(&self) -> bool {
        self.raw
    }

    /// Starts a value: a comma before any member but the first of its container.
    fn separate(&mut self) {
        if std::mem::take(&mut self.after_key) {
            return;
        }
        if let Some(written) = self.written.last_mut() {
            if *written {
                self.out.push(',');
            }
            *written = true;
        }
    }

    /// Opens an object; write each member as [`Writer::key`] then its value.
    pub fn object(&mut self) {
        self.separate();
        self.out.push('{');
        self.written.push(false);
    }

    /// Closes the innermost object.
    pub fn end_object(&mut self) {
        self.written.pop();
        self.out.push('}');
    }

    /// Opens an array.
    pub fn array(&mut self) {
        self.separate();
        self.out.push('[');
        self.written.push(false);
    }

    /// Closes the innermost array.
    pub fn end_array(&mut self) {
        self.written.pop();
        self.out.push(']');
    }

    /// A member's key; the value written next is its value.
    pub fn key(&mut self, key: &str) {
        self.separate();
        escape_into(&mut self.out, key);
        self.out.push(':');
        self.after_key = true;
    }

    /// A member: its key, then its value.
    pub fn member<T: super::ToJson + ?Sized>(&mut self, key: &str, value: &T) {
        self.key(key);
        value.write_json(self);
    }

    /// `null`.
    pub fn null(&mut self) {
        self.separate();
        self.out.push_str("null");
    }

    /// `true` or `false`.
    pub fn bool(&mut self, value: bool) {
        self.separate();
        self.out.push_str(if value { "true" } else { "false" });
    }

    /// An unsigned integer.
    pub fn u64(&mut self, value: u64) {
        self.separate();
        self.beyond_js |= value > MAX_SAFE;
        push_u64(&mut self.out, value);
    }

    /// A signed integer.
    pub fn i64(&mut self, value: i64) {
        self.separate();
        self.beyond_js |= value.unsigned_abs() > MAX_SAFE;
        if value < 0 {
            self.out.push('-');
        }
        push_u64(&mut self.out, value.unsigned_abs());
    }

    /// A number as serde_json wrote it (a float in its shortest form; never NaN or infinite,
    /// which a `Number` cannot hold).
    pub fn number(&mut self, number: &Number) {
        if let Some(value) = number.as_u64() {
            self.u64(value);
        } else if let Some(value) = number.as_i64() {
            self.i64(value);
        } else {
            self.f64(number.as_f64().unwrap_or(0.0));
        }
    }

    /// A finite float in its shortest form, as serde_json writes it (the caller checks that
    /// it is finite: JSON has no NaN or infinity).
    pub fn f64(&mut self, value: f64) {
        self.separate();
        self.out.push_str(zmij::Buffer::new().format_finite(value));
    }

    /// A string, escaped.
    pub fn str(&mut self, value: &str) {
        self.separate();
        escape_into(&mut self.out, value);
    }

    /// JSON text written as it is (the caller vouches that it is one valid value).
    pub fn raw(&mut self, json: &str) {
        self.separate();
        self.raw = true;
        self.out.push_str(json);
    }

    /// A tree, object keys in the map's (sorted) order.
    pub fn value(&mut self, value: &Value) {
        match value {
            Value::Null => self.null(),
            Value::Bool(flag) => self.bool(*flag),
            Value::Number(number) => self.number(number),
            Value::String(text) => self.str(text),
            Value::Array(items) => {
                self.array();
                for item in items {
                    self.value(item);
                }
                self.end_array();
            }
            Value::Object(map) => {
                self.object();
                for (key, item) in map {
                    self.key(key);
                    self.value(item);
                }
                self.end_object();
            }
        }
    }
}

fn push_u64(out: &mut String, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or("0"));
}

/// Appends `text` as a JSON string: quote, backslash and control characters escaped, the
/// short forms where JSON has them, `\u00XX` (lowercase hex) otherwise.
pub fn escape_into(out: &mut String, text: &str) {
    out.push('"');
    let mut run = 0;
    for (at, byte) in text.bytes().enumerate() {
        let short = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&text[run..at]);
        if short.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(HEX[usize::from(byte >> 4)] as char);
            out.push(HEX[usize::from(byte & 0xf)] as char);
        } else {
            out.push_str(short);
        }
        run = at + 1;
    }
    out.push_str(&text[run..]);
    out.push('"');
}
