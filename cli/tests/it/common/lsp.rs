//! The language server's wire format, read independently of the server's own code: frames
//! (`Content-Length` header, blank line, JSON body) and a thread that hands them over.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{channel, Receiver};

use serde_json::Value;

/// `body` as one frame.
pub fn frame(body: &str) -> String {
    format!("Content-Length: {}\r\n\r\n{body}", body.len())
}

/// One frame from the server, or `None` at the end of its output (or a frame that is not JSON).
pub fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length:") {
            length = n.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// The messages the server writes to `output`, read on a thread of their own so that a test can
/// wait for one with a timeout.
pub fn incoming(output: impl Read + Send + 'static) -> Receiver<Value> {
    let (sender, incoming) = channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(output);
        while let Some(message) = read_message(&mut reader) {
            if sender.send(message).is_err() {
                break;
            }
        }
    });
    incoming
}
