use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use profbridge_translate::otlp::ExportProfilesServiceRequest;
use profbridge_translate::Validated;
use prost::Message;

use super::received::{Body, Received, Sent};
use super::RequestPool;
use crate::protocol::compression::Compression;

/// What flows through a pipeline (the Collector's pdata calls it
/// `Profiles` too): one received request, its invalid profiles already
/// removed, and what the pipeline needs to know about it.
#[derive(Debug, Clone)]
pub struct Profiles {
    request: ExportProfilesServiceRequest,
    /// What `validate_request` found for `request` exactly as it is, when
    /// whoever made the batch validated it; changing the request drops it.
    validation: Option<Validated>,
    /// The bytes `request` arrived as, while it is unchanged: exporters
    /// send these rather than encode and compress it again.
    received: Option<Received>,
    pub received_at: SystemTime,
    /// Its protobuf size.
    pub encoded_size: usize,
    /// The memory it holds decoded (estimated), which queue budgets count.
    pub memory_size: usize,
    /// Where the request goes when the batch is dropped.
    request_pool: Option<Arc<RequestPool>>,
}

impl Profiles {
    /// A batch of a request that has not been validated as it is: its
    /// exporters validate it.
    pub fn new(request: ExportProfilesServiceRequest, encoded_size: usize) -> Self {
        let memory_size = super::memory_estimate(&request).max(encoded_size);
        Self {
            request,
            validation: None,
            received: None,
            received_at: SystemTime::now(),
            encoded_size,
            memory_size,
            request_pool: None,
        }
    }

    /// The batch, giving its request to `pool` when it is dropped.
    #[must_use]
    pub fn returning_to(mut self, pool: Option<&Arc<RequestPool>>) -> Self {
        self.request_pool = pool.cloned();
        self
    }

    /// The pool the request goes back to, for batches made from this one.
    pub fn request_pool(&self) -> Option<&Arc<RequestPool>> {
        self.request_pool.as_ref()
    }

    /// A batch of a request that `validate_request` checked: `validation`
    /// must be what it returned for `request`, unchanged since. Exporters
    /// then skip validating it again.
    pub fn validated(
        request: ExportProfilesServiceRequest,
        encoded_size: usize,
        validation: Validated,
    ) -> Self {
        let mut batch = Self::new(request, encoded_size);
        batch.validation = Some(validation);
        batch
    }

    /// A batch of `request`, `encoded_size` protobuf bytes, as it arrived
    /// (`received`), with what `validate_request` found for it if it was
    /// validated. Exporters send those bytes until the request is changed.
    pub fn received(
        request: ExportProfilesServiceRequest,
        encoded_size: usize,
        received: Received,
        validation: Option<Validated>,
    ) -> Self {
        let mut batch = Self::new(request, encoded_size);
        batch.memory_size = batch.memory_size.saturating_add(received.size());
        batch.validation = validation;
        batch.received = (!received.is_empty()).then_some(received);
        batch
    }

    /// The bytes the request arrived as, while it is unchanged.
    pub fn as_received(&self) -> Option<&Received> {
        self.received.as_ref()
    }

    /// The protobuf the request arrived as, while it is unchanged.
    pub fn received_protobuf(&self) -> Option<&Bytes> {
        self.received.as_ref()?.protobuf_bytes()
    }

    /// The request as protobuf: the bytes it arrived as when it is
    /// unchanged, else encoded now.
    pub fn protobuf(&self) -> Bytes {
        self.received_protobuf()
            .cloned()
            .unwrap_or_else(|| Bytes::from(self.request.encode_to_vec()))
    }

    /// The request as sent compressed with `compression`: the message
    /// that arrived when it arrived so and is unchanged, else its protobuf
    /// (as it arrived, or encoded now) for the exporter to compress.
    pub fn body(&self, compression: Compression) -> Body {
        self.received
            .as_ref()
            .and_then(|received| received.body(compression))
            .unwrap_or_else(|| Body::Encoded(Bytes::from(self.request.encode_to_vec())))
    }

    /// How [`Self::body`] would make the body, without making it.
    pub fn sent_as(&self, compression: Compression) -> Sent {
        self.received
            .as_ref()
            .and_then(|received| received.body(compression))
            .map_or(Sent::Encoded, |body| body.sent())
    }

    pub fn request(&self) -> &ExportProfilesServiceRequest {
        &self.request
    }

    /// The request, to change: the batch no longer counts as validated,
    /// nor as the bytes it arrived as.
    pub fn request_mut(&mut self) -> &mut ExportProfilesServiceRequest {
        self.validation = None;
        self.received = None;
        &mut self.request
    }

    pub fn into_request(mut self) -> ExportProfilesServiceRequest {
        std::mem::take(&mut self.request)
    }

    /// The validation the request passed as it is, if the batch was made
    /// with one ([`Profiles::validated`]).
    pub fn validation(&self) -> Option<&Validated> {
        self.validation.as_ref()
    }

    pub fn profile_count(&self) -> usize {
        self.request
            .resource_profiles
            .iter()
            .flat_map(|r| &r.scope_profiles)
            .map(|s| s.profiles.len())
            .sum()
    }

    pub fn sample_count(&self) -> usize {
        self.request
            .resource_profiles
            .iter()
            .flat_map(|r| &r.scope_profiles)
            .flat_map(|s| &s.profiles)
            .map(|p| p.samples.len())
            .sum()
    }
}

/// The request goes back to its pool, if it came from one, for a receiver
/// to decode a later request into.
impl Drop for Profiles {
    fn drop(&mut self) {
        if let Some(pool) = &self.request_pool {
            let received = self.received.as_ref().map_or(0, Received::size);
            pool.keep(
                std::mem::take(&mut self.request),
                self.memory_size.saturating_sub(received),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use profbridge_translate::validate_request;

    use super::*;

    fn validated_batch() -> Profiles {
        let request = profbridge_testkit::ebpf_like_request(10, 1);
        let validation = validate_request(&request).unwrap_or_default();
        Profiles::validated(request, 100, validation)
    }

    #[test]
    fn a_validated_batch_keeps_its_validation_until_its_request_is_changed() {
        let mut batch = validated_batch();
        assert!(batch.validation().is_some());
        assert!(batch.clone().validation().is_some());
        batch.request_mut().resource_profiles.clear();
        assert!(batch.validation().is_none());
        assert!(Profiles::new(batch.into_request(), 100)
            .validation()
            .is_none());
    }

    #[test]
    fn a_received_batch_sends_its_bytes_until_its_request_is_changed() {
        let request = profbridge_testkit::ebpf_like_request(10, 1);
        // Bytes our encoder would not write: a field it does not know.
        let mut arrived = request.encode_to_vec();
        arrived.extend_from_slice(&[0xf8, 0x3f, 0x01]);
        let arrived = Bytes::from(arrived);
        let gzipped = Bytes::from_static(b"gzipped");
        let received = Received::compressed(
            Compression::Gzip,
            Some(gzipped.clone()),
            Some(arrived.clone()),
        );
        let mut batch = Profiles::received(request.clone(), arrived.len(), received, None);
        assert_eq!(batch.encoded_size, arrived.len());
        assert_eq!(batch.protobuf(), arrived);
        assert_eq!(batch.clone().received_protobuf(), Some(&arrived));
        assert_eq!(batch.body(Compression::Gzip), Body::AsReceived(gzipped));
        assert_eq!(batch.body(Compression::Zstd), Body::Recompress(arrived));
        batch.request_mut();
        assert!(batch.received_protobuf().is_none());
        let encoded = Bytes::from(request.encode_to_vec());
        assert_eq!(batch.protobuf(), encoded);
        assert_eq!(batch.body(Compression::Gzip), Body::Encoded(encoded));
    }
}
