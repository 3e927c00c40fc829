//! The bytes a request arrived as: its protobuf, and the message as it
//! was compressed on the wire. Exporters send them instead of encoding
//! and compressing the request again while it is unchanged; receivers
//! keep only the forms some exporter can use ([`Wanted`]).

use bytes::Bytes;

use crate::protocol::compression::Compression;

/// The forms of one request as it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    /// How the message was compressed on the wire.
    arrived: Compression,
    /// The protobuf, when something sends or writes it as it is.
    protobuf: Option<Bytes>,
    /// The message as compressed on the wire (never `Identity`), when
    /// something sends or stores it so.
    compressed: Option<Bytes>,
}

impl Received {
    /// A request that arrived as `protobuf`, uncompressed.
    pub fn protobuf(protobuf: Bytes) -> Self {
        Self {
            arrived: Compression::Identity,
            protobuf: Some(protobuf),
            compressed: None,
        }
    }

    /// A request that arrived compressed with `arrived` as `compressed`,
    /// and decompressed to `protobuf`; either may be left out. An
    /// uncompressed message is its protobuf.
    pub fn compressed(
        arrived: Compression,
        compressed: Option<Bytes>,
        protobuf: Option<Bytes>,
    ) -> Self {
        if arrived == Compression::Identity {
            return Self {
                arrived,
                protobuf: protobuf.or(compressed),
                compressed: None,
            };
        }
        Self {
            arrived,
            protobuf,
            compressed,
        }
    }

    /// How the message was compressed on the wire.
    pub fn arrived(&self) -> Compression {
        self.arrived
    }

    /// The protobuf it arrived as, if kept.
    pub fn protobuf_bytes(&self) -> Option<&Bytes> {
        self.protobuf.as_ref()
    }

    /// The message as compressed on the wire, if it was and it was kept.
    pub fn compressed_bytes(&self) -> Option<&Bytes> {
        self.compressed.as_ref()
    }

    /// Whether nothing was kept.
    pub fn is_empty(&self) -> bool {
        self.protobuf.is_none() && self.compressed.is_none()
    }

    /// The bytes it holds.
    pub fn size(&self) -> usize {
        self.protobuf.as_ref().map_or(0, Bytes::len)
            + self.compressed.as_ref().map_or(0, Bytes::len)
    }

    /// The message as sent with `compression`: the bytes that arrived when
    /// it arrived so, else the protobuf that arrived (to compress).
    pub fn body(&self, compression: Compression) -> Option<Body> {
        if compression == self.arrived {
            let wire = match compression {
                Compression::Identity => self.protobuf.as_ref(),
                Compression::Gzip | Compression::Zstd => self.compressed.as_ref(),
            };
            if let Some(wire) = wire {
                return Some(Body::AsReceived(wire.clone()));
            }
        }
        self.protobuf.clone().map(Body::Recompress)
    }
}

/// A request's message as an exporter sends it with its compression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// The bytes that arrived, already compressed as the exporter sends.
    AsReceived(Bytes),
    /// The protobuf that arrived, to compress (if the exporter does).
    Recompress(Bytes),
    /// The request encoded now, to compress (if the exporter does).
    Encoded(Bytes),
}

impl Body {
    /// How it was made, for the exporter's count.
    pub fn sent(&self) -> Sent {
        match self {
            Self::AsReceived(_) => Sent::AsReceived,
            Self::Recompress(_) => Sent::Recompressed,
            Self::Encoded(_) => Sent::Encoded,
        }
    }

    pub fn bytes(&self) -> &Bytes {
        match self {
            Self::AsReceived(bytes) | Self::Recompress(bytes) | Self::Encoded(bytes) => bytes,
        }
    }

    pub fn into_bytes(self) -> Bytes {
        match self {
            Self::AsReceived(bytes) | Self::Recompress(bytes) | Self::Encoded(bytes) => bytes,
        }
    }
}

/// What a successful export sent, for
/// `profbridge_exporter_sent_requests_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sent {
    /// No OTLP protobuf: a pprof or JSON file, JSON, nothing at all.
    #[default]
    Other,
    /// The bytes the request arrived as, compression included.
    AsReceived,
    /// The protobuf it arrived as, compressed with another compression,
    /// or decompressed.
    Recompressed,
    /// The request encoded again.
    Encoded,
}

impl Sent {
    /// The `body` label of each OTLP protobuf kind.
    pub const BODIES: [&'static str; 3] = ["as_received", "recompressed", "encoded"];

    /// Its `body` label, if it is an OTLP protobuf kind.
    pub fn body(self) -> Option<&'static str> {
        match self {
            Self::Other => None,
            Self::AsReceived => Some("as_received"),
            Self::Recompressed => Some("recompressed"),
            Self::Encoded => Some("encoded"),
        }
    }
}

/// Which forms of an arriving request the exporters of the pipelines it
/// goes to can send or store as they are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wanted {
    /// Protobuf sent or written uncompressed.
    identity: bool,
    gzip: bool,
    zstd: bool,
    /// A persistent queue, which stores the compressed form, whichever
    /// compression it has.
    stored: bool,
}

impl Wanted {
    /// An exporter that sends protobuf compressed with `compression`.
    pub fn sending(compression: Compression) -> Self {
        Self {
            identity: compression == Compression::Identity,
            gzip: compression == Compression::Gzip,
            zstd: compression == Compression::Zstd,
            stored: false,
        }
    }

    /// A persistent queue.
    pub fn stored() -> Self {
        Self {
            stored: true,
            ..Self::default()
        }
    }

    #[must_use]
    pub fn and(self, other: Self) -> Self {
        Self {
            identity: self.identity || other.identity,
            gzip: self.gzip || other.gzip,
            zstd: self.zstd || other.zstd,
            stored: self.stored || other.stored,
        }
    }

    fn sends(self, compression: Compression) -> bool {
        match compression {
            Compression::Identity => self.identity,
            Compression::Gzip => self.gzip,
            Compression::Zstd => self.zstd,
        }
    }

    /// Whether to keep, for a request that arrived compressed with
    /// `arrived`, its compressed message and its protobuf. An exporter
    /// with another compression (or none) needs the protobuf; a persistent
    /// queue stores the compressed message (smaller) unless the protobuf
    /// is kept anyway, and a request that arrived uncompressed as its
    /// protobuf.
    pub fn keeps(self, arrived: Compression) -> Keep {
        let others = [Compression::Identity, Compression::Gzip, Compression::Zstd]
            .into_iter()
            .any(|other| other != arrived && self.sends(other));
        if arrived == Compression::Identity {
            return Keep {
                compressed: false,
                protobuf: self.sends(arrived) || others || self.stored,
            };
        }
        Keep {
            compressed: self.sends(arrived) || (self.stored && !others),
            protobuf: others,
        }
    }
}

/// Which forms of an arriving request to keep with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep {
    pub compressed: bool,
    pub protobuf: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Compression; 3] = [Compression::Identity, Compression::Gzip, Compression::Zstd];

    #[test]
    fn a_form_is_kept_only_for_an_exporter_or_queue_that_sends_or_stores_it() {
        assert_eq!(
            Wanted::default().keeps(Compression::Gzip),
            Keep {
                compressed: false,
                protobuf: false
            }
        );
        for arrived in ALL {
            let keep = Wanted::sending(arrived).keeps(arrived);
            assert_eq!(
                keep.compressed,
                arrived != Compression::Identity,
                "{arrived:?}"
            );
            assert_eq!(
                keep.protobuf,
                arrived == Compression::Identity,
                "{arrived:?}"
            );
            for exporter in ALL.into_iter().filter(|c| *c != arrived) {
                let keep = Wanted::sending(exporter).keeps(arrived);
                assert!(keep.protobuf, "{arrived:?} sent {exporter:?}");
                assert!(!keep.compressed, "{arrived:?} sent {exporter:?}");
            }
        }
        let stored = Wanted::stored().keeps(Compression::Zstd);
        assert!(stored.compressed && !stored.protobuf);
        let stored_plain = Wanted::stored()
            .and(Wanted::sending(Compression::Identity))
            .keeps(Compression::Gzip);
        assert!(!stored_plain.compressed && stored_plain.protobuf);
        assert!(Wanted::stored().keeps(Compression::Identity).protobuf);
        let both = Wanted::sending(Compression::Gzip)
            .and(Wanted::sending(Compression::Identity))
            .keeps(Compression::Gzip);
        assert!(both.compressed && both.protobuf);
    }

    #[test]
    fn the_body_is_what_arrived_when_the_compression_matches() {
        let protobuf = Bytes::from_static(b"protobuf");
        let gzipped = Bytes::from_static(b"gzipped");
        let received = Received::compressed(
            Compression::Gzip,
            Some(gzipped.clone()),
            Some(protobuf.clone()),
        );
        assert_eq!(
            received.body(Compression::Gzip),
            Some(Body::AsReceived(gzipped.clone()))
        );
        assert_eq!(
            received.body(Compression::Zstd),
            Some(Body::Recompress(protobuf.clone()))
        );
        assert_eq!(
            received.body(Compression::Identity),
            Some(Body::Recompress(protobuf.clone()))
        );
        let plain = Received::protobuf(protobuf.clone());
        assert_eq!(
            plain.body(Compression::Identity),
            Some(Body::AsReceived(protobuf.clone()))
        );
        assert_eq!(
            plain.body(Compression::Gzip),
            Some(Body::Recompress(protobuf))
        );
        let only_compressed = Received::compressed(Compression::Gzip, Some(gzipped), None);
        assert_eq!(only_compressed.body(Compression::Zstd), None);
    }
}
