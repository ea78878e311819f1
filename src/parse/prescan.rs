//! A linear pre-scan that refuses input the recursive passes cannot take, before they see it.
//!
//! The parser's output and every pass over it recurse once per level of nesting, so a file of
//! a million `-` signs (`x = ------…1`) or `.b` attributes would overflow any stack. CPython
//! refuses such files too: more than 200 open brackets ("too many nested parentheses"), 100
//! levels of indentation ("too many levels of indentation"), and expressions nested about 3,000
//! deep ("maximum recursion depth exceeded during compilation"). This scan tokenizes roughly
//! (strings, comments, numbers, names, operators) and estimates, for every point of the file,
//! how deep the syntax tree is there:
//!
//! * each open bracket adds one level;
//! * within a bracket, operators of one precedence class form a chain: a left-associative binary
//!   operator adds a level per use until an operator of a looser class takes over, prefix
//!   operators (`-`, `not`, `await`, `lambda`) and `**` add a level each, trailers (`.x`,
//!   `(…)`, `[…]`) too, while the n-ary `and`, `or` and comparisons add one level in all;
//! * a closed bracket is an operand as deep as what it held;
//! * `,`, `=`, `:` and `;` start a new sibling; indentation levels and `elif` chains add levels
//!   for the statements.
//!
//! The estimate stays within a small factor of the real depth either way, so refusing only
//! estimates above [`MAX_NESTING`] (thirty times CPython's limit) never refuses a file CPython
//! compiles, and no file that passes nests deeper than the parse stack can hold.

mod strings;

use crate::source::SourceFile;

pub(crate) use crate::limits::MAX_NESTING;
/// CPython's limit on open brackets (`MAXLEVEL` in its tokenizer).
pub const MAX_BRACKETS: usize = 200;
/// CPython's limit on indentation levels (`MAXINDENT` in its tokenizer).
pub const MAX_INDENT: usize = 100;

/// Why the pre-scan refused a file: a byte offset and a message in CPython's words.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Rejected {
    pub offset: usize,
    pub message: String,
}

/// Checks `file` for NUL bytes, too many open brackets, too deep indentation and over-deep
/// expressions, in one pass over its bytes.
pub(crate) fn check(file: &SourceFile) -> Result<(), Rejected> {
    let text = file.text();
    if let Some(offset) = text.bytes().position(|b| b == 0) {
        return Err(Rejected {
            offset,
            message: "source code cannot contain null bytes".to_string(),
        });
    }
    Scanner::new(text.as_bytes()).run()
}

/// Precedence classes, loosest first.
const LAMBDA: usize = 0;
const TERNARY: usize = 1;
const OR: usize = 2;
const AND: usize = 3;
const NOT: usize = 4;
const COMPARE: usize = 5;
const BIT_OR: usize = 6;
const BIT_XOR: usize = 7;
const BIT_AND: usize = 8;
const SHIFT: usize = 9;
const ARITH: usize = 10;
const TERM: usize = 11;
const UNARY: usize = 12;
const POWER: usize = 13;
const AWAIT: usize = 14;
const TRAILER: usize = 15;
const CLASSES: usize = 16;

/// The string a scan is inside: its quote, and whether it is raw or an f-string.
#[derive(Clone, Copy, Debug)]
struct Quote {
    byte: u8,
    triple: bool,
    raw: bool,
    format: bool,
    /// In the format spec of a replacement field (after its `:`), where `{` opens a field again.
    spec: bool,
}

/// What opened a nesting level.
#[derive(Clone, Copy, Debug)]
enum Opener {
    /// The file itself (the bottom level, never closed).
    File,
    /// `(`, `[` or `{`.
    Bracket,
    /// A replacement field `{…}` of an f-string; the scan returns into that string.
    Field(Quote),
}

/// One nesting level: the chains of operators since the last sibling separator.
#[derive(Debug)]
struct Level {
    opener: Opener,
    chains: [usize; CLASSES],
    /// Depth of the deepest bracketed operand since the last separator.
    operand: usize,
    /// Sum of `chains` plus `operand`: this level's depth.
    depth: usize,
    /// The deepest this level has been (what its operand weighs once closed).
    peak: usize,
    /// Lambda parameter lists open at this level (their `,` and `=` separate nothing).
    lambda_params: usize,
}

impl Level {
    fn new(opener: Opener) -> Level {
        Level {
            opener,
            chains: [0; CLASSES],
            operand: 0,
            depth: 0,
            peak: 0,
            lambda_params: 0,
        }
    }

    fn recount(&mut self) {
        self.depth = self.chains.iter().sum::<usize>() + self.operand;
        self.peak = self.peak.max(self.depth);
    }

    /// Forgets the chains of classes tighter than `class`: an operator of `class` ends them.
    fn close_tighter(&mut self, class: usize) {
        for chain in &mut self.chains[class + 1..] {
            *chain = 0;
        }
    }

    /// A new sibling (after `,` `=` `:` `;`): its depth starts again.
    fn separate(&mut self) {
        if self.lambda_params == 0 {
            self.chains = [0; CLASSES];
            self.operand = 0;
            self.recount();
        }
    }
}

struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
    levels: Vec<Level>,
    /// Sum over the enclosing levels of their depth plus one for their opener.
    outer: usize,
    /// Open brackets (not f-string fields), for CPython's limit.
    brackets: usize,
    /// Inside a string, if any.
    quote: Option<Quote>,
    /// Whether the last token ends an operand (a name, a number, a string, a closing bracket).
    after_operand: bool,
    /// At the start of a logical line (before its first token).
    line_start: bool,
    /// Indentation widths of the open blocks with the length of the `elif` chain at each.
    indents: Vec<(usize, usize)>,
    /// Levels from statements: open blocks plus `elif` chains.
    statements: usize,
}

impl<'a> Scanner<'a> {
    fn new(bytes: &'a [u8]) -> Scanner<'a> {
        Scanner {
            bytes,
            pos: 0,
            levels: vec![Level::new(Opener::File)],
            outer: 0,
            brackets: 0,
            quote: None,
            after_operand: false,
            line_start: true,
            indents: vec![(0, 0)],
            statements: 0,
        }
    }

    fn level(&mut self) -> &mut Level {
        let last = self.levels.len() - 1;
        &mut self.levels[last]
    }

    fn refuse(&self, offset: usize, message: impl Into<String>) -> Rejected {
        Rejected {
            offset,
            message: message.into(),
        }
    }

    /// Fails when the estimated depth at `offset` is over the limit.
    fn check_depth(&self, offset: usize) -> Result<(), Rejected> {
        let depth = self.outer + self.levels[self.levels.len() - 1].depth + self.statements;
        if depth > MAX_NESTING {
            return Err(self.refuse(
                offset,
                format!(
                    "too deeply nested code: more than {MAX_NESTING} levels \
                     (maximum recursion depth exceeded)"
                ),
            ));
        }
        Ok(())
    }

    /// An operator of `class` that chains (each use nests one level deeper).
    fn chain(&mut self, class: usize, prefix: bool, at: usize) -> Result<(), Rejected> {
        let level = self.level();
        if !prefix {
            level.close_tighter(class);
        }
        level.chains[class] += 1;
        level.recount();
        self.after_operand = false;
        self.check_depth(at)
    }

    /// An n-ary operator of `class` (`and`, `or`, comparisons): one level however many.
    fn flat(&mut self, class: usize) {
        let level = self.level();
        level.close_tighter(class);
        level.chains[class] = level.chains[class].max(1);
        level.recount();
        self.after_operand = false;
    }

    fn separate(&mut self) {
        self.level().separate();
        self.after_operand = false;
    }

    fn open(&mut self, opener: Opener, at: usize) -> Result<(), Rejected> {
        if matches!(opener, Opener::Bracket) {
            self.brackets += 1;
            if self.brackets > MAX_BRACKETS {
                return Err(self.refuse(at, "too many nested parentheses"));
            }
        }
        self.outer += self.level().depth + 1;
        self.levels.push(Level::new(opener));
        self.after_operand = false;
        self.check_depth(at)
    }

    /// Closes the innermost level (unless it is the file's): it becomes an operand as deep as
    /// its peak. Returns its opener.
    fn close(&mut self) -> Opener {
        if self.levels.len() == 1 {
            return Opener::File;
        }
        let closed = self.levels.pop().unwrap_or_else(|| Level::new(Opener::File));
        if matches!(closed.opener, Opener::Bracket) {
            self.brackets -= 1;
        }
        let depth = self.level().depth;
        self.outer -= depth + 1;
        let level = self.level();
        level.operand = level.operand.max(closed.peak + 1);
        level.recount();
        self.after_operand = true;
        closed.opener
    }

    fn run(mut self) -> Result<(), Rejected> {
        while self.pos < self.bytes.len() {
            match self.quote {
                Some(quote) => self.in_string(quote)?,
                None => self.token()?,
            }
        }
        Ok(())
    }

    fn peek(&self, ahead: usize) -> u8 {
        self.bytes.get(self.pos + ahead).copied().unwrap_or(0)
    }

    /// The width of a line break at `pos` (`\n`, `\r\n`, `\r`), 0 if none.
    fn line_break(&self) -> usize {
        match self.peek(0) {
            b'\n' => 1,
            b'\r' if self.peek(1) == b'\n' => 2,
            b'\r' => 1,
            _ => 0,
        }
    }

    /// Measures the indentation of a logical line's first token, CPython's way (tabs to the next
    /// multiple of 8, a form feed starts again), and updates the block stack.
    fn indentation(&mut self, first: usize) -> Result<(), Rejected> {
        let mut start = first;
        while start > 0 && !matches!(self.bytes[start - 1], b'\n' | b'\r') {
            start -= 1;
        }
        let mut width = 0;
        for &b in &self.bytes[start..first] {
            width = match b {
                b'\t' => (width / 8 + 1) * 8,
                b'\x0c' => 0,
                _ => width + 1,
            };
        }
        while self.indents.len() > 1 && self.indents[self.indents.len() - 1].0 > width {
            let (_, elifs) = self.indents.pop().unwrap_or((0, 0));
            self.statements -= elifs + 1;
        }
        if width > self.indents[self.indents.len() - 1].0 {
            self.indents.push((width, 0));
            self.statements += 1;
            if self.indents.len() > MAX_INDENT {
                return Err(self.refuse(first, "too many levels of indentation"));
            }
        }
        let word = self.word_at(first);
        let last = self.indents.len() - 1;
        if word == b"elif" {
            self.indents[last].1 += 1;
            self.statements += 1;
        } else if word != b"else" {
            self.statements -= self.indents[last].1;
            self.indents[last].1 = 0;
        }
        self.check_depth(first)
    }

    fn word_at(&self, at: usize) -> &'a [u8] {
        let bytes: &'a [u8] = self.bytes;
        let end = bytes[at..]
            .iter()
            .position(|&b| !is_name_byte(b))
            .map_or(bytes.len(), |n| at + n);
        &bytes[at..end]
    }

    /// Scans one token of code.
    fn token(&mut self) -> Result<(), Rejected> {
        let at = self.pos;
        let b = self.bytes[at];
        let newline = self.line_break();
        if newline > 0 {
            self.pos += newline;
            if self.levels.len() == 1 {
                self.level().lambda_params = 0;
                self.separate();
                self.line_start = true;
            }
            return Ok(());
        }
        match b {
            b' ' | b'\t' | b'\x0c' => {
                self.pos += 1;
                return Ok(());
            }
            b'#' => {
                while self.pos < self.bytes.len() && self.line_break() == 0 {
                    self.pos += 1;
                }
                return Ok(());
            }
            b'\\' => {
                // A line continuation joins lines; anything else is an error for the parser.
                self.pos += 1;
                self.pos += self.line_break();
                return Ok(());
            }
            _ => {}
        }
        if self.line_start {
            self.line_start = false;
            if self.levels.len() == 1 {
                self.indentation(at)?;
            }
        }
        if is_name_byte(b) && !b.is_ascii_digit() {
            return self.name();
        }
        if b.is_ascii_digit() || (b == b'.' && self.peek(1).is_ascii_digit()) {
            self.number();
            self.after_operand = true;
            return Ok(());
        }
        if b == b'"' || b == b'\'' {
            self.start_string(false, false);
            return Ok(());
        }
        self.operator(at)
    }

    fn name(&mut self) -> Result<(), Rejected> {
        let at = self.pos;
        let word = self.word_at(at);
        self.pos += word.len();
        if matches!(self.peek(0), b'"' | b'\'') && word.len() <= 2 {
            let lower = word.to_ascii_lowercase();
            let prefix = matches!(
                lower.as_slice(),
                b"r" | b"u" | b"b" | b"f" | b"br" | b"rb" | b"fr" | b"rf"
            );
            if prefix {
                self.start_string(lower.contains(&b'r'), lower.contains(&b'f'));
                return Ok(());
            }
        }
        let operand = self.after_operand;
        match word {
            b"lambda" => {
                self.level().lambda_params += 1;
                self.chain(LAMBDA, true, at)?;
            }
            b"if" if operand => {
                let level = self.level();
                level.close_tighter(TERNARY);
                level.recount();
                self.after_operand = false;
            }
            b"else" if operand => self.chain(TERNARY, false, at)?,
            b"for" if operand => self.separate(),
            b"or" => self.flat(OR),
            b"and" => self.flat(AND),
            b"not" if operand => self.flat(COMPARE),
            b"not" => self.chain(NOT, true, at)?,
            b"in" | b"is" => self.flat(COMPARE),
            b"await" => self.chain(AWAIT, true, at)?,
            b"yield" => self.chain(LAMBDA, true, at)?,
            b"True" | b"False" | b"None" => self.after_operand = true,
            _ if is_keyword(word) => self.after_operand = false,
            _ => self.after_operand = true,
        }
        Ok(())
    }

    /// Skips a number, stopping where CPython's tokenizer would (`1if` is `1`, `if`).
    fn number(&mut self) {
        let bytes = self.bytes;
        let radix = bytes[self.pos] == b'0' && matches!(self.peek(1) | 0x20, b'x' | b'o' | b'b');
        if radix {
            self.pos += 2;
            while self.pos < bytes.len() && (bytes[self.pos].is_ascii_hexdigit() || bytes[self.pos] == b'_') {
                self.pos += 1;
            }
            return;
        }
        let digits = |s: &mut Self| {
            while s.pos < bytes.len() && (bytes[s.pos].is_ascii_digit() || bytes[s.pos] == b'_') {
                s.pos += 1;
            }
        };
        digits(self);
        if self.peek(0) == b'.' {
            self.pos += 1;
            digits(self);
        }
        if matches!(self.peek(0), b'e' | b'E') {
            let sign = usize::from(matches!(self.peek(1), b'+' | b'-'));
            if self.peek(1 + sign).is_ascii_digit() {
                self.pos += 1 + sign;
                digits(self);
            }
        }
        if matches!(self.peek(0), b'j' | b'J') {
            self.pos += 1;
        }
    }

    fn operator(&mut self, at: usize) -> Result<(), Rejected> {
        let rest = &self.bytes[at..];
        let three = rest.get(..3).unwrap_or(rest);
        let two = rest.get(..2).unwrap_or(rest);
        let operand = self.after_operand;
        let (len, result) =
            if three == b"**=" || three == b"//=" || three == b">>=" || three == b"<<=" || three == b"..." {
                let ellipsis = three == b"...";
                self.separate();
                self.after_operand = ellipsis;
                (3, Ok(()))
            } else if matches!(
                two,
                b"+=" | b"-=" | b"*=" | b"/=" | b"%=" | b"&=" | b"|=" | b"^=" | b"@=" | b":=" | b"->"
            ) {
                self.separate();
                (2, Ok(()))
            } else if matches!(two, b"==" | b"!=" | b"<=" | b">=" | b"<>") {
                self.flat(COMPARE);
                (2, Ok(()))
            } else if two == b"**" {
                (2, if operand { self.chain(POWER, false, at) } else { Ok(()) })
            } else if two == b"//" {
                (2, self.chain(TERM, false, at))
            } else if two == b"<<" || two == b">>" {
                (2, self.chain(SHIFT, false, at))
            } else {
                let result = match rest[0] {
                    b'(' | b'[' => {
                        let result = if operand {
                            self.chain(TRAILER, false, at)
                        } else {
                            Ok(())
                        };
                        result.and_then(|()| self.open(Opener::Bracket, at))
                    }
                    b'{' => self.open(Opener::Bracket, at),
                    b')' | b']' => {
                        self.close();
                        Ok(())
                    }
                    b'}' => {
                        if let Opener::Field(quote) = self.close() {
                            self.quote = Some(quote);
                        }
                        Ok(())
                    }
                    b'.' => self.chain(TRAILER, false, at),
                    b',' | b';' | b'=' => {
                        self.separate();
                        Ok(())
                    }
                    b':' => {
                        self.colon();
                        Ok(())
                    }
                    b'<' | b'>' => {
                        self.flat(COMPARE);
                        Ok(())
                    }
                    b'|' => self.chain(BIT_OR, false, at),
                    b'^' => self.chain(BIT_XOR, false, at),
                    b'&' => self.chain(BIT_AND, false, at),
                    b'+' | b'-' if operand => self.chain(ARITH, false, at),
                    b'+' | b'-' | b'~' => self.chain(UNARY, true, at),
                    b'*' | b'/' | b'%' | b'@' if operand => self.chain(TERM, false, at),
                    _ => {
                        // `*args`, a decorator's `@`, `!r`, `$`, `?`, stray bytes: no nesting.
                        self.after_operand = false;
                        Ok(())
                    }
                };
                (1, result)
            };
        self.pos += len;
        result
    }

    /// `:` ends a lambda's parameters, starts an f-string field's format spec, or separates.
    fn colon(&mut self) {
        let level = self.level();
        if level.lambda_params > 0 {
            level.lambda_params -= 1;
            level.close_tighter(LAMBDA);
            level.recount();
            self.after_operand = false;
            return;
        }
        if let Opener::Field(quote) = level.opener {
            // `!=` was taken already; a `:` directly in a field starts its format spec.
            self.quote = Some(Quote { spec: true, ..quote });
            return;
        }
        self.separate();
    }
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

fn is_keyword(word: &[u8]) -> bool {
    matches!(
        word,
        b"assert"
            | b"async"
            | b"break"
            | b"class"
            | b"continue"
            | b"def"
            | b"del"
            | b"elif"
            | b"else"
            | b"except"
            | b"finally"
            | b"for"
            | b"from"
            | b"global"
            | b"if"
            | b"import"
            | b"nonlocal"
            | b"pass"
            | b"raise"
            | b"return"
            | b"try"
            | b"while"
            | b"with"
            | b"as"
    )
}

#[cfg(test)]
mod tests;
