//! `Content-Length` framing over a byte stream: header blocks read line by line within
//! [`MAX_HEADER_LINE`], bodies up to [`MAX_MESSAGE`], and after a bad header a skip ahead to the
//! next `Content-Length:` header.

use std::io::{self, Read};

/// The largest message body accepted: 64 MiB, far above any source file an editor sends.
pub const MAX_MESSAGE: usize = 64 << 20;

/// The longest header line accepted.
pub const MAX_HEADER_LINE: usize = 8 << 10;
const HEADER: &[u8] = b"content-length:";

/// Why a message could not be framed.
pub enum Bad {
    /// Input failed or ended inside a message: nothing more to read.
    Io,
    /// The header block is unusable; the message says why.
    Frame(String),
}

/// A buffered reader over the input that can look ahead for the next header.
pub struct Framer<'r, R: Read> {
    input: &'r mut R,
    buf: Vec<u8>,
    start: usize,
    eof: bool,
}

impl<'r, R: Read> Framer<'r, R> {
    pub fn new(input: &'r mut R) -> Framer<'r, R> {
        Framer {
            input,
            buf: Vec::new(),
            start: 0,
            eof: false,
        }
    }

    fn buffered(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Reads more input; false at its end.
    fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.start > 0 && self.start >= self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        let mut chunk = [0; 64 << 10];
        loop {
            match self.input.read(&mut chunk) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
    }

    /// The next header line without its line break; `None` at the end of input.
    fn line(&mut self) -> Result<Option<Vec<u8>>, Bad> {
        loop {
            if let Some(end) = self.buffered().iter().position(|&b| b == b'\n') {
                if end > MAX_HEADER_LINE {
                    return Err(Bad::Frame(format!("a header line is over {MAX_HEADER_LINE} bytes")));
                }
                let mut line = self.buffered()[..end].to_vec();
                self.start += end + 1;
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(Some(line));
            }
            if self.buffered().len() > MAX_HEADER_LINE {
                // Leave the long line for `skip_to_header` to pass over.
                return Err(Bad::Frame(format!("a header line is over {MAX_HEADER_LINE} bytes")));
            }
            if !self.fill().map_err(|_| Bad::Io)? {
                return Ok(None);
            }
        }
    }

    /// The body of the next message; `None` at the end of input between messages.
    pub fn next_body(&mut self) -> Result<Option<Vec<u8>>, Bad> {
        let mut length = None;
        let mut first = true;
        loop {
            let Some(line) = self.line()? else {
                return if first { Ok(None) } else { Err(Bad::Io) };
            };
            if line.is_empty() {
                if first {
                    // Blank lines between messages are harmless.
                    continue;
                }
                break;
            }
            first = false;
            let text = String::from_utf8_lossy(&line);
            let Some((name, value)) = text.split_once(':') else {
                return Err(Bad::Frame(format!("Parse error: bad header line `{}`", clip(&text))));
            };
            if name.trim().eq_ignore_ascii_case("content-length") {
                let value = value.trim();
                let n: u64 = value
                    .parse()
                    .map_err(|_| Bad::Frame(format!("Parse error: bad Content-Length `{}`", clip(value))))?;
                if n > MAX_MESSAGE as u64 {
                    return Err(Bad::Frame(format!(
                        "Parse error: a message of {n} bytes is over the limit of {MAX_MESSAGE} bytes"
                    )));
                }
                length = usize::try_from(n).ok();
            }
        }
        let Some(length) = length else {
            return Err(Bad::Frame("Parse error: a message without Content-Length".to_string()));
        };
        while self.buffered().len() < length {
            if !self.fill().map_err(|_| Bad::Io)? {
                return Err(Bad::Io);
            }
        }
        let body = self.buffered()[..length].to_vec();
        self.start += length;
        Ok(Some(body))
    }

    /// Skips input up to the next `Content-Length:` (any case); false at the end of input.
    pub fn skip_to_header(&mut self) -> io::Result<bool> {
        loop {
            let found = self
                .buffered()
                .windows(HEADER.len())
                .position(|window| window.eq_ignore_ascii_case(HEADER));
            if let Some(at) = found {
                self.start += at;
                return Ok(true);
            }
            // Keep a tail that may hold the start of a header cut by the read.
            self.start = self.buf.len() - self.buffered().len().min(HEADER.len() - 1);
            if !self.fill()? {
                return Ok(false);
            }
        }
    }
}

/// At most 80 characters of a header, for messages.
fn clip(text: &str) -> String {
    text.chars().take(80).collect()
}
