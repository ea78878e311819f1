//! Taking frames out of a text: the original bytes back, and offsets between the two texts.

use std::ops::Range;

use super::Frame;

/// The text with every frame removed and what it displaced put back.
#[must_use]
pub fn strip(text: &str, frames: &[Frame]) -> String {
    strip_with_anchors(text, frames).0
}

/// [`strip`], also giving for each frame the offset in the stripped text where it was.
#[must_use]
pub fn strip_with_anchors(text: &str, frames: &[Frame]) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(text.len());
    let mut anchors = vec![0; frames.len()];
    let mut seen = vec![false; frames.len()];
    let mut at = 0;
    for (range, replacement, i) in pieces(frames) {
        if range.start < at {
            continue;
        }
        out.push_str(&text[at..range.start]);
        if !seen[i] {
            anchors[i] = out.len();
            seen[i] = true;
        }
        out.push_str(replacement);
        at = range.end;
    }
    out.push_str(&text[at..]);
    (out, anchors)
}

/// Where `offset` of the stripped text (see [`strip`]) is in the text with the frames: for
/// messages about the original that must name lines of the file as it is.
#[must_use]
pub fn to_framed(frames: &[Frame], offset: usize) -> usize {
    let (mut at, mut shift) = (0, 0isize);
    for (range, replacement, _) in pieces(frames) {
        if range.start < at {
            continue;
        }
        let start = range.start.saturating_add_signed(-shift);
        if offset < start {
            break;
        }
        if offset < start + replacement.len() {
            return range.start;
        }
        shift += range.len() as isize - replacement.len() as isize;
        at = range.end;
    }
    offset.saturating_add_signed(shift)
}

/// What [`strip`] replaces: (range of the framed text, its replacement, frame index), in order.
fn pieces(frames: &[Frame]) -> Vec<(Range<usize>, &str, usize)> {
    let mut pieces: Vec<(Range<usize>, &str, usize)> = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        match frame.removal.as_slice() {
            [whole] => pieces.push((whole.clone(), &frame.was, i)),
            [marker, changed] => {
                pieces.push((marker.clone(), "", i));
                pieces.push((changed.clone(), &frame.was, i));
            }
            _ => {}
        }
    }
    pieces.sort_by_key(|(range, _, _)| range.start);
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marker::FrameKind;

    fn frame(removal: Range<usize>, was: &str) -> Frame {
        Frame {
            recipe: "r".into(),
            hook: "h".into(),
            hash: String::new(),
            content: removal.clone(),
            removal: vec![removal],
            was: was.into(),
            line: 1,
            kind: FrameKind::Insert,
        }
    }

    #[test]
    fn original_offsets_map_past_inserted_blocks() {
        // Framed "ab[XYZ]cd" where [XYZ] (3..6) was inserted; "ab[Q]d" where Q (2..3) replaced "c".
        let inserted = [frame(3..6, "")];
        assert_eq!(to_framed(&inserted, 2), 2);
        assert_eq!(to_framed(&inserted, 3), 6);
        assert_eq!(to_framed(&inserted, 4), 7);
        let replaced = [frame(2..3, "c")];
        assert_eq!(to_framed(&replaced, 2), 2);
        assert_eq!(to_framed(&replaced, 3), 3);
        let grown = [frame(2..5, "c")];
        assert_eq!(to_framed(&grown, 3), 5);
    }
}
