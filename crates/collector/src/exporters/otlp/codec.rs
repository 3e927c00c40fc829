//! A gRPC client codec that sends an already encoded request, so that a
//! batch is encoded once and never cloned, and decodes the response.

use bytes::{BufMut, Bytes};
use prost::Message;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::Status;

use profbridge_translate::otlp::ExportProfilesServiceResponse;

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ExportCodec;

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct EncodedRequest;

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ResponseDecoder;

impl Encoder for EncodedRequest {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for ResponseDecoder {
    type Item = ExportProfilesServiceResponse;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Self::Item>, Status> {
        ExportProfilesServiceResponse::decode(src)
            .map(Some)
            .map_err(|e| Status::internal(format!("cannot decode the response: {e}")))
    }
}

impl Codec for ExportCodec {
    type Encode = Bytes;
    type Decode = ExportProfilesServiceResponse;
    type Encoder = EncodedRequest;
    type Decoder = ResponseDecoder;

    fn encoder(&mut self) -> EncodedRequest {
        EncodedRequest
    }

    fn decoder(&mut self) -> ResponseDecoder {
        ResponseDecoder
    }
}
