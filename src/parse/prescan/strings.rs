//! String literals: the scan skips their content, and in an f-string enters its replacement
//! fields, whose expressions nest like brackets.

use super::{Opener, Quote, Rejected, Scanner};

impl Scanner<'_> {
    pub(super) fn start_string(&mut self, raw: bool, format: bool) {
        let byte = self.bytes[self.pos];
        let triple = self.peek(1) == byte && self.peek(2) == byte;
        self.pos += if triple { 3 } else { 1 };
        self.quote = Some(Quote {
            byte,
            triple,
            raw,
            format,
            spec: false,
        });
    }

    /// Scans string content up to its end or, in an f-string, up to a replacement field.
    pub(super) fn in_string(&mut self, quote: Quote) -> Result<(), Rejected> {
        let bytes = self.bytes;
        while self.pos < bytes.len() {
            let at = self.pos;
            let b = bytes[at];
            if b == quote.byte && (!quote.triple || (self.peek(1) == b && self.peek(2) == b)) {
                self.pos += if quote.triple { 3 } else { 1 };
                self.end_string(quote);
                return Ok(());
            }
            if b == b'\\' {
                if !quote.raw && quote.format && self.peek(1) == b'N' && self.peek(2) == b'{' {
                    // `\N{NAME}`: the braces are not a field.
                    while self.pos < bytes.len() && bytes[self.pos] != b'}' && self.line_break() == 0 {
                        self.pos += 1;
                    }
                    continue;
                }
                self.pos += 1;
                self.pos += self.line_break().max(usize::from(self.pos < bytes.len()));
                continue;
            }
            if !quote.triple && self.line_break() > 0 {
                // An unterminated string: the parser reports it.
                self.end_string(quote);
                return Ok(());
            }
            if quote.format && (b == b'{' || b == b'}') {
                if !quote.spec && self.peek(1) == b {
                    self.pos += 2;
                    continue;
                }
                self.pos += 1;
                if b == b'{' {
                    self.quote = None;
                    return self.open(Opener::Field(quote), at);
                }
                if quote.spec {
                    // The end of the field this spec belongs to.
                    if let Opener::Field(outer) = self.close() {
                        self.quote = Some(outer);
                        return Ok(());
                    }
                }
                continue;
            }
            self.pos += 1;
        }
        Ok(())
    }

    /// After a string's closing quote: a spec's string ends its field too.
    pub(super) fn end_string(&mut self, quote: Quote) {
        self.quote = None;
        if quote.spec {
            if let Opener::Field(outer) = self.close() {
                return self.end_string(outer);
            }
        }
        self.after_operand = true;
    }
}
