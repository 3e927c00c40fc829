//! The compressions request bodies (HTTP `Content-Encoding`) and gRPC
//! messages (`grpc-encoding`) come in, by the names the headers give.

/// How a request body (HTTP) or message (gRPC) is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Identity,
    Gzip,
    Zstd,
}

impl Compression {
    /// The compression a `Content-Encoding` or `grpc-encoding` value names
    /// (lowercase), if it is one of these.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "" | "identity" => Some(Self::Identity),
            "gzip" => Some(Self::Gzip),
            "zstd" => Some(Self::Zstd),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Identity => "identity",
            Self::Gzip => "gzip",
            Self::Zstd => "zstd",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_header_values() {
        for compression in [Compression::Identity, Compression::Gzip, Compression::Zstd] {
            assert_eq!(
                Compression::from_name(compression.name()),
                Some(compression)
            );
        }
        assert_eq!(Compression::from_name(""), Some(Compression::Identity));
        assert_eq!(Compression::from_name("br"), None);
    }
}
