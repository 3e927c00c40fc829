//! A gRPC codec that hands the request message over as raw bytes, so that
//! decoding runs on the blocking pool from one contiguous buffer (prost's
//! fast path) instead of on an async worker through tonic's chunked buffer.

use bytes::{Buf, Bytes};
use prost::Message;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::Status;

use profbridge_translate::otlp::ExportProfilesServiceResponse;

#[derive(Debug, Clone, Copy, Default)]
pub struct RawRequestCodec;

#[derive(Debug, Clone, Copy, Default)]
pub struct RawDecoder;

#[derive(Debug, Clone, Copy, Default)]
pub struct ResponseEncoder;

impl Decoder for RawDecoder {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

impl Encoder for ResponseEncoder {
    type Item = ExportProfilesServiceResponse;
    type Error = Status;

    fn encode(&mut self, item: Self::Item, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(dst)
            .map_err(|e| Status::internal(format!("encoding the response: {e}")))
    }
}

impl Codec for RawRequestCodec {
    type Encode = ExportProfilesServiceResponse;
    type Decode = Bytes;
    type Encoder = ResponseEncoder;
    type Decoder = RawDecoder;

    fn encoder(&mut self) -> ResponseEncoder {
        ResponseEncoder
    }

    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}
