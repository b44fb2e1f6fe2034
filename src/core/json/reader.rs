//! A pull reader over JSON text: the caller asks for the value it expects next, so a record
//! decodes in one pass with no tree in between (RFC 8259, as strict as serde_json was:
//! no trailing commas, no comments, no lone surrogates, no control characters in strings).

use std::borrow::Cow;

use serde_json::{Map, Number, Value};

use super::JsonError;

/// Deepest nesting read, as serde_json (whose recursion budget of 128 refuses the 128th
/// level): deeper text is refused, not recursed into.
pub const MAX_DEPTH: usize = 127;

/// Reads one JSON text, value by value.
pub struct Reader<'a> {
    text: &'a str,
    at: usize,
    depth: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `text`.
    pub fn new(text: &'a str) -> Self {
        Self {
            text,
            at: 0,
            depth: 0,
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// An error at the current position.
    pub fn error(&self, message: impl Into<Cow<'static, str>>) -> JsonError {
        JsonError {
            message: message.into(),
            at: self.at,
        }
    }

    /// The next significant byte, after whitespace, without taking it.
    pub fn peek(&mut self) -> Option<u8> {
        while let Some(&byte) = self.bytes().get(self.at) {
            if !matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    fn expect(&mut self, byte: u8, what: &'static str) -> Result<(), JsonError> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error(what))
        }
    }

    fn literal(&mut self, word: &'static str) -> Result<(), JsonError> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(())
        } else {
            Err(self.error("expected a JSON value"))
        }
    }

    /// Checks that nothing but whitespace is left.
    pub fn end(&mut self) -> Result<(), JsonError> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.error("trailing characters")),
        }
    }

    /// Takes `null` if it is next.
    pub fn null(&mut self) -> Result<bool, JsonError> {
        if self.peek() == Some(b'n') {
            self.literal("null")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Reads `true` or `false`.
    pub fn bool(&mut self) -> Result<bool, JsonError> {
        match self.peek() {
            Some(b't') => self.literal("true").map(|()| true),
            Some(b'f') => self.literal("false").map(|()| false),
            _ => Err(self.error("expected a boolean")),
        }
    }

    /// The text of the number that is next (validated as JSON).
    fn number_text(&mut self) -> Result<(&'a str, bool), JsonError> {
        self.peek();
        let start = self.at;
        let bytes = self.bytes();
        let mut at = start;
        if bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        let digits = |at: &mut usize| {
            let from = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at - from
        };
        let int_from = at;
        match digits(&mut at) {
            0 => return Err(self.error("expected a number")),
            n if n > 1 && bytes[int_from] == b'0' => {
                return Err(self.error("a number has a leading zero"))
            }
            _ => {}
        }
        let mut integer = true;
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            integer = false;
            if digits(&mut at) == 0 {
                return Err(self.error("a number has no digits after its point"));
            }
        }
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            integer = false;
            if matches!(bytes.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            if digits(&mut at) == 0 {
                return Err(self.error("a number has no digits in its exponent"));
            }
        }
        self.at = at;
        Ok((&self.text[start..at], integer))
    }

    /// Reads a non-negative integer (no fraction, no exponent).
    pub fn u64(&mut self) -> Result<u64, JsonError> {
        let (text, integer) = self.number_text()?;
        match text.parse::<u64>() {
            Ok(value) if integer => Ok(value),
            _ => Err(self.error("expected an unsigned integer")),
        }
    }

    /// Reads an unsigned integer that fits 32 bits.
    pub fn u32(&mut self) -> Result<u32, JsonError> {
        let value = self.u64()?;
        u32::try_from(value).map_err(|_| self.error("expected an integer below 2^32"))
    }

    /// Reads any number as serde_json would hold it: an integer if it is one and fits,
    /// otherwise a finite float.
    pub fn number(&mut self) -> Result<Number, JsonError> {
        let (text, integer) = self.number_text()?;
        if integer {
            if let Ok(value) = text.parse::<u64>() {
                return Ok(Number::from(value));
            }
            // `-0` is the float -0.0 in serde_json, not the integer 0.
            match text.parse::<i64>() {
                Ok(0) | Err(_) => {}
                Ok(value) => return Ok(Number::from(value)),
            }
        }
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .ok_or_else(|| self.error("number out of range"))
    }

    /// Reads a string; borrowed from the text when it has no escapes.
    pub fn str(&mut self) -> Result<Cow<'a, str>, JsonError> {
        self.expect(b'"', "expected a string")?;
        let bytes = self.bytes();
        let start = self.at;
        let mut owned: Option<String> = None;
        let mut run = start;
        loop {
            let Some(&byte) = bytes.get(self.at) else {
                return Err(self.error("unterminated string"));
            };
            match byte {
                b'"' => {
                    let tail = &self.text[run..self.at];
                    self.at += 1;
                    return Ok(match owned {
                        None => Cow::Borrowed(tail),
                        Some(mut text) => {
                            text.push_str(tail);
                            Cow::Owned(text)
                        }
                    });
                }
                b'\\' => {
                    let whole = self.text;
                    let before = &whole[run..self.at];
                    self.at += 1;
                    let escaped = self.escape()?;
                    let text = owned.get_or_insert_with(String::new);
                    text.push_str(before);
                    text.push(escaped);
                    run = self.at;
                }
                0..=0x1f => return Err(self.error("a control character in a string")),
                _ => self.at += 1,
            }
        }
    }

    /// Reads an owned string.
    pub fn string(&mut self) -> Result<String, JsonError> {
        self.str().map(Cow::into_owned)
    }

    /// The character of the escape after a backslash.
    fn escape(&mut self) -> Result<char, JsonError> {
        let Some(&byte) = self.bytes().get(self.at) else {
            return Err(self.error("unterminated string"));
        };
        self.at += 1;
        Ok(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                match unit {
                    0xD800..=0xDBFF => {
                        if !self.text[self.at..].starts_with("\\u") {
                            return Err(self.error("a lone leading surrogate"));
                        }
                        self.at += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(self.error("a lone leading surrogate"));
                        }
                        let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                        char::from_u32(code).ok_or_else(|| self.error("an invalid escape"))?
                    }
                    0xDC00..=0xDFFF => return Err(self.error("a lone trailing surrogate")),
                    _ => char::from_u32(unit).ok_or_else(|| self.error("an invalid escape"))?,
                }
            }
            _ => return Err(self.error("an invalid escape")),
        })
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let digits = self
            .text
            .get(self.at..self.at + 4)
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error("an invalid \\u escape"))?;
        self.at += 4;
        u32::from_str_radix(digits, 16).map_err(|_| self.error("an invalid \\u escape"))
    }

    fn enter(&mut self, open: u8, what: &'static str) -> Result<(), JsonError> {
        self.expect(open, what)?;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error("nested too deep"));
        }
        Ok(())
    }

    /// Opens an object; read its members with [`Reader::key`].
    pub fn object(&mut self) -> Result<(), JsonError> {
        self.enter(b'{', "expected an object")
    }

    /// The next member's key, or `None` (the object closed) after the last one.
    pub fn key(&mut self) -> Result<Option<Cow<'a, str>>, JsonError> {
        match self.peek() {
            Some(b'}') => {
                self.at += 1;
                self.depth -= 1;
                return Ok(None);
            }
            Some(b',') if self.after_member() => {
                self.at += 1;
            }
            Some(b'"') if !self.after_member() => {}
            _ => return Err(self.error("expected a key or the end of the object")),
        }
        let key = self.str()?;
        self.expect(b':', "expected a colon after a key")?;
        Ok(Some(key))
    }

    /// Opens an array; read its items while [`Reader::item`] says one is next.
    pub fn array(&mut self) -> Result<(), JsonError> {
        self.enter(b'[', "expected an array")
    }

    /// Whether another item follows (taking the comma), or the array closed.
    pub fn item(&mut self) -> Result<bool, JsonError> {
        match self.peek() {
            Some(b']') => {
                self.at += 1;
                self.depth -= 1;
                Ok(false)
            }
            Some(b',') if self.after_member() => {
                self.at += 1;
                Ok(true)
            }
            Some(_) if !self.after_member() => Ok(true),
            _ => Err(self.error("expected a comma or the end of the array")),
        }
    }

    /// Whether the last significant byte before here ended a member (so a comma is due)
    /// rather than opened the container.
    fn after_member(&self) -> bool {
        let before = self.bytes()[..self.at]
            .iter()
            .rev()
            .find(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'));
        !matches!(before, Some(b'{' | b'[' | b','))
    }

    /// Skips the next value, checking it is well formed.
    pub fn skip(&mut self) -> Result<(), JsonError> {
        match self.peek() {
            Some(b'{') => {
                self.object()?;
                while self.key()?.is_some() {
                    self.skip()?;
                }
                Ok(())
            }
            Some(b'[') => {
                self.array()?;
                while self.item()? {
                    self.skip()?;
                }
                Ok(())
            }
            Some(b'"') => self.str().map(drop),
            Some(b't' | b'f') => self.bool().map(drop),
            Some(b'n') => self.literal("null"),
            Some(_) => self.number_text().map(drop),
            None => Err(self.error("expected a JSON value")),
        }
    }

    /// The exact text of the next value, checked to be well formed.
    pub fn raw(&mut self) -> Result<&'a str, JsonError> {
        self.peek();
        let start = self.at;
        self.skip()?;
        Ok(&self.text[start..self.at])
    }

    /// Reads the next value as a tree.
    pub fn value(&mut self) -> Result<Value, JsonError> {
        match self.peek() {
            Some(b'{') => {
                self.object()?;
                let mut map = Map::new();
                while let Some(key) = self.key()? {
                    let item = self.value()?;
                    map.insert(key.into_owned(), item);
                }
                Ok(Value::Object(map))
            }
            Some(b'[') => {
                self.array()?;
                let mut items = Vec::new();
                while self.item()? {
                    items.push(self.value()?);
                }
                Ok(Value::Array(items))
            }
            Some(b'"') => self.string().map(Value::String),
            Some(b't' | b'f') => self.bool().map(Value::Bool),
            Some(b'n') => self.literal("null").map(|()| Value::Null),
            Some(_) => self.number().map(Value::Number),
            None => Err(self.error("expected a JSON value")),
        }
    }
}
