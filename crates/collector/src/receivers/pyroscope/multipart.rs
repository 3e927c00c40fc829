//! `multipart/form-data` bodies (RFC 7578), already read whole: the parts
//! by name.

/// One part: its form field name and its bytes.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Part<'a> {
    pub name: String,
    pub data: &'a [u8],
}

/// The boundary of a `multipart/form-data` Content-Type, `None` for any
/// other type.
pub(super) fn boundary(content_type: &str) -> Option<String> {
    let mut items = content_type.split(';').map(str::trim);
    let media = items.next()?;
    if !media.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    items
        .filter_map(|item| item.split_once('='))
        .find(|(key, _)| key.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, value)| value.trim().trim_matches('"').to_owned())
}

/// A `multipart/form-data` body that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum MultipartError {
    #[error("multipart: the Content-Type has an empty boundary")]
    EmptyBoundary,
    #[error("multipart: the boundary {0:?} never occurs")]
    NoBoundary(String),
    #[error("multipart: a boundary line does not end with CRLF")]
    BoundaryLineNotEnded,
    #[error("multipart: a part's headers do not end with an empty line")]
    HeadersNotEnded,
    /// `.0` counts from 1.
    #[error("multipart: part {0} has no Content-Disposition with a name")]
    NoName(usize),
    #[error("multipart: part {0:?} is not closed by the boundary")]
    NotClosed(String),
}

/// The parts of `body`, in order.
pub(super) fn parts<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<Part<'a>>, MultipartError> {
    if boundary.is_empty() {
        return Err(MultipartError::EmptyBoundary);
    }
    let delimiter = format!("--{boundary}");
    let closing = format!("\r\n{delimiter}");
    let start = find(body, delimiter.as_bytes())
        .ok_or_else(|| MultipartError::NoBoundary(boundary.to_owned()))?;
    let mut rest = body.get(start + delimiter.len()..).unwrap_or_default();
    let mut parts = Vec::new();
    loop {
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        let padding = rest
            .iter()
            .take_while(|b| **b == b' ' || **b == b'\t')
            .count();
        rest = rest
            .get(padding..)
            .and_then(|r| r.strip_prefix(b"\r\n"))
            .ok_or(MultipartError::BoundaryLineNotEnded)?;
        let (head, content) = if let Some(content) = rest.strip_prefix(b"\r\n") {
            (&[][..], content)
        } else {
            let end = find(rest, b"\r\n\r\n").ok_or(MultipartError::HeadersNotEnded)?;
            (
                rest.get(..end).unwrap_or_default(),
                rest.get(end + 4..).unwrap_or_default(),
            )
        };
        let name = field_name(head).ok_or(MultipartError::NoName(parts.len() + 1))?;
        let Some(end) = find(content, closing.as_bytes()) else {
            return Err(MultipartError::NotClosed(name));
        };
        parts.push(Part {
            name,
            data: content.get(..end).unwrap_or_default(),
        });
        rest = content.get(end + closing.len()..).unwrap_or_default();
    }
}

/// The `name` parameter of the part's Content-Disposition header.
fn field_name(head: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(head);
    head.split("\r\n").find_map(|line| {
        let (header, value) = line.split_once(':')?;
        if !header.trim().eq_ignore_ascii_case("content-disposition") {
            return None;
        }
        value
            .split(';')
            .filter_map(|item| item.split_once('='))
            .find(|(key, _)| key.trim().eq_ignore_ascii_case("name"))
            .map(|(_, value)| value.trim().trim_matches('"').to_owned())
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_come_from_form_data_only() {
        assert_eq!(
            boundary("multipart/form-data; boundary=\"abc\""),
            Some("abc".to_owned())
        );
        assert_eq!(
            boundary("Multipart/Form-Data;boundary=x-1"),
            Some("x-1".to_owned())
        );
        assert_eq!(boundary("application/octet-stream"), None);
    }

    #[test]
    fn parts_are_split_by_name() {
        let body = b"preamble\r\n--xyz\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"p.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n\x1f\x8b\r\n--\r\n--xyz\r\nContent-Disposition: form-data; name=sample_type_config\r\n\r\n{}\r\n--xyz--\r\n";
        let parsed = parts(body, "xyz");
        assert_eq!(
            parsed,
            Ok(vec![
                Part {
                    name: "profile".to_owned(),
                    data: b"\x1f\x8b\r\n--",
                },
                Part {
                    name: "sample_type_config".to_owned(),
                    data: b"{}",
                },
            ])
        );
    }

    #[test]
    fn broken_bodies_are_explained() {
        let error = |body: &[u8]| {
            parts(body, "b")
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(error(b"nothing").contains("never occurs"));
        assert!(
            error(b"--b\r\nContent-Disposition: form-data; name=\"p\"\r\n\r\ndata")
                .contains("not closed")
        );
        assert!(error(b"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--")
            .contains("no Content-Disposition"));
    }
}
