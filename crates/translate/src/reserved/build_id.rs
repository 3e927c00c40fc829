//! Which build-id attribute a pprof mapping's build id goes under.

/// Go build ids are `/`-joined base64url segments; GNU ones are hex.
pub(crate) fn looks_like_go_build_id(build_id: &str) -> bool {
    let segments: Vec<&str> = build_id.split('/').collect();
    segments.len() >= 2
        && segments.iter().all(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}
