//! YAML aliases are expanded by the YAML reader, so a small file whose
//! anchors refer to anchors ("billion laughs") can grow to billions of
//! nodes. This counts what the document would expand to, from the
//! parser's events and without expanding anything, so that such a file is
//! refused before it is read.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// More nodes than any configuration needs, far fewer than would exhaust
/// memory.
pub(crate) const MAX_EXPANDED_NODES: u64 = 100_000;

/// How many nodes `text` holds once every alias is expanded, counted up to
/// a little past `MAX_EXPANDED_NODES`. `None` when the text does not parse
/// (the YAML reader then says why).
pub(crate) fn expanded_nodes(text: &str) -> Option<u64> {
    let mut counter = NodeCounter::default();
    Parser::new_from_str(text)
        .load(&mut counter, true)
        .ok()
        .map(|()| counter.total)
}

#[derive(Default)]
struct NodeCounter {
    /// Expanded size of each anchored node, by anchor id.
    anchored: HashMap<usize, u64>,
    /// Open sequences and mappings: (anchor id, nodes so far).
    open: Vec<(usize, u64)>,
    total: u64,
}

impl NodeCounter {
    fn add(&mut self, nodes: u64) {
        let count = match self.open.last_mut() {
            Some((_, count)) => count,
            None => &mut self.total,
        };
        *count = count.saturating_add(nodes).min(MAX_EXPANDED_NODES + 1);
    }

    fn close(&mut self) {
        if let Some((anchor, nodes)) = self.open.pop() {
            if anchor != 0 {
                self.anchored.insert(anchor, nodes);
            }
            self.add(nodes);
        }
    }
}

impl MarkedEventReceiver for NodeCounter {
    fn on_event(&mut self, event: Event, _mark: Marker) {
        match event {
            Event::Scalar(_, _, anchor, _) => {
                if anchor != 0 {
                    self.anchored.insert(anchor, 1);
                }
                self.add(1);
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                self.open.push((anchor, 1));
            }
            Event::SequenceEnd | Event::MappingEnd => self.close(),
            Event::Alias(anchor) => {
                let nodes = self.anchored.get(&anchor).copied().unwrap_or(1);
                self.add(nodes);
            }
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_documents_count_their_nodes() {
        assert_eq!(expanded_nodes("a: 1\nb: [x, y]\n"), Some(1 + 2 + 1 + 3));
    }

    #[test]
    fn aliases_count_what_they_expand_to() {
        let text = "base: &b {x: 1, y: 2}\none: *b\ntwo: *b\n";
        // The root mapping, three keys, the anchored mapping of five nodes
        // and two aliases of it.
        assert_eq!(expanded_nodes(text), Some(1 + 3 + 5 * 3));
    }

    #[test]
    fn nested_aliases_are_counted_without_being_expanded() {
        let mut text = String::from("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for level in 1..=9 {
            let previous = level - 1;
            let items = vec![format!("*l{previous}"); 10].join(", ");
            text.push_str(&format!("l{level}: &l{level} [{items}]\n"));
        }
        assert_eq!(expanded_nodes(&text), Some(MAX_EXPANDED_NODES + 1));
    }

    #[test]
    fn unparsable_text_is_left_to_the_reader() {
        assert_eq!(expanded_nodes("a: [1, 2\n"), None);
    }
}
