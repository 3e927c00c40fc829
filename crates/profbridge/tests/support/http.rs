//! Plain HTTP/1.1 exchanges with `Connection: close`, for endpoints a
//! test reads byte for byte (metrics, pages, health).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One exchange: (status, head, body).
pub fn exchange_with_head(address: SocketAddr, head: &str, body: &[u8]) -> (u16, String, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (
        head.split(' ').nth(1).unwrap().parse().unwrap(),
        head.to_owned(),
        body.to_owned(),
    )
}

/// One exchange: (status, body).
pub fn exchange(address: SocketAddr, head: &str, body: &[u8]) -> (u16, String) {
    let (status, _, body) = exchange_with_head(address, head, body);
    (status, body)
}

/// `GET path`: (status, body).
pub fn get(address: SocketAddr, path: &str) -> (u16, String) {
    exchange(
        address,
        &format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"),
        b"",
    )
}
