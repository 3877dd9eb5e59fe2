//! Engine.IO v4 packets and HTTP long-polling payloads.
//!
//! A text packet is its type digit followed by its data (`4hello`, `2probe`). Over WebSocket a binary
//! frame is a message packet as it is; in a polling payload a binary message is `b` + base64.
//! Polling payloads join packets with the record separator (0x1e).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Separates the packets of one polling payload.
pub const RECORD_SEPARATOR: char = '\u{1e}';

/// The handshake the server sends first (`0{...}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenPayload {
    pub sid: String,
    pub upgrades: Vec<String>,
    pub ping_interval: u64,
    pub ping_timeout: u64,
    pub max_payload: u64,
}

/// An Engine.IO packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet {
    Open(OpenPayload),
    Close,
    /// Heartbeats carry no data, except the upgrade probe (`2probe` / `3probe`).
    Ping(String),
    Pong(String),
    Message(Message),
    Upgrade,
    Noop,
}

/// The data of a message packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Text(String),
    Binary(Bytes),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("empty packet")]
    Empty,
    #[error("unknown packet type {0:?}")]
    UnknownType(char),
    #[error("the open packet is not valid: {0}")]
    InvalidOpen(String),
    #[error("binary data is not valid base64")]
    InvalidBase64,
    #[error("packet type {0:?} carries no data")]
    UnexpectedData(char),
}

impl Packet {
    fn type_digit(&self) -> char {
        match self {
            Packet::Open(_) => '0',
            Packet::Close => '1',
            Packet::Ping(_) => '2',
            Packet::Pong(_) => '3',
            Packet::Message(_) => '4',
            Packet::Upgrade => '5',
            Packet::Noop => '6',
        }
    }

    /// The packet as one text frame or polling record. A binary message becomes `b<base64>`,
    /// which is how polling carries it; over WebSocket send [`Message::Binary`] as a binary frame.
    pub fn encode_text(&self) -> String {
        match self {
            Packet::Message(Message::Binary(bytes)) => format!("b{}", BASE64.encode(bytes)),
            Packet::Message(Message::Text(text)) => format!("4{text}"),
            Packet::Ping(data) => format!("2{data}"),
            Packet::Pong(data) => format!("3{data}"),
            Packet::Open(open) => {
                // Serialising plain strings and numbers cannot fail.
                format!("0{}", serde_json::to_string(open).unwrap_or_default())
            }
            other => other.type_digit().to_string(),
        }
    }

    /// The bytes this packet adds to a polling payload: its text and the separator before it.
    /// A message is measured without being encoded (a long-polling session counts what waits for
    /// its client).
    pub fn payload_len(&self) -> usize {
        let text = match self {
            Packet::Message(Message::Text(text)) => 1 + text.len(),
            Packet::Message(Message::Binary(bytes)) => 1 + bytes.len().div_ceil(3) * 4,
            Packet::Ping(data) | Packet::Pong(data) => 1 + data.len(),
            other => other.encode_text().len(),
        };
        RECORD_SEPARATOR.len_utf8() + text
    }

    /// Parses one text frame or polling record (`b<base64>` included).
    pub fn decode_text(text: &str) -> Result<Packet, DecodeError> {
        let mut chars = text.chars();
        let kind = chars.next().ok_or(DecodeError::Empty)?;
        let data = chars.as_str();
        let no_data = |packet: Packet| {
            if data.is_empty() {
                Ok(packet)
            } else {
                Err(DecodeError::UnexpectedData(kind))
            }
        };
        match kind {
            '0' => serde_json::from_str(data)
                .map(Packet::Open)
                .map_err(|err| DecodeError::InvalidOpen(err.to_string())),
            '1' => no_data(Packet::Close),
            '2' => Ok(Packet::Ping(data.to_owned())),
            '3' => Ok(Packet::Pong(data.to_owned())),
            '4' => Ok(Packet::Message(Message::Text(data.to_owned()))),
            '5' => no_data(Packet::Upgrade),
            '6' => no_data(Packet::Noop),
            'b' => BASE64
                .decode(data)
                .map(|bytes| Packet::Message(Message::Binary(Bytes::from(bytes))))
                .map_err(|_| DecodeError::InvalidBase64),
            other => Err(DecodeError::UnknownType(other)),
        }
    }
}

/// Joins packets into one polling payload.
pub fn encode_payload(packets: &[Packet]) -> String {
    let mut payload = String::new();
    for (index, packet) in packets.iter().enumerate() {
        if index > 0 {
            payload.push(RECORD_SEPARATOR);
        }
        payload.push_str(&packet.encode_text());
    }
    payload
}

/// Splits a polling payload (a POST body) into its packets; any bad record fails the whole payload.
pub fn decode_payload(payload: &str) -> Result<Vec<Packet>, DecodeError> {
    payload
        .split(RECORD_SEPARATOR)
        .map(Packet::decode_text)
        .collect()
}

impl Packet {
    /// A text packet as the server reads it from a client, as leniently as the reference's
    /// parser (engine.io-parser takes data after any packet type): data after a close, upgrade or
    /// noop means nothing, and an open packet, which no client sends, is read as a noop.
    pub fn decode_from_client(text: &str) -> Result<Packet, DecodeError> {
        match text.as_bytes().first() {
            Some(b'0' | b'6') => Ok(Packet::Noop),
            Some(b'1') => Ok(Packet::Close),
            Some(b'5') => Ok(Packet::Upgrade),
            _ => Packet::decode_text(text),
        }
    }
}

/// A polling POST's payload, read as [`Packet::decode_from_client`] reads each packet.
pub fn decode_client_payload(payload: &str) -> Result<Vec<Packet>, DecodeError> {
    payload
        .split(RECORD_SEPARATOR)
        .map(Packet::decode_from_client)
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_clients_packets_are_read_as_leniently_as_the_reference_reads_them() {
        assert_eq!(Packet::decode_from_client("1x"), Ok(Packet::Close));
        assert_eq!(Packet::decode_from_client("5"), Ok(Packet::Upgrade));
        assert_eq!(Packet::decode_from_client("6x"), Ok(Packet::Noop));
        assert_eq!(Packet::decode_from_client("0"), Ok(Packet::Noop));
        assert_eq!(
            Packet::decode_from_client("3probe"),
            Ok(Packet::Pong("probe".into()))
        );
        assert!(Packet::decode_from_client("9").is_err());
        assert_eq!(
            decode_client_payload("6x\u{1e}1"),
            Ok(vec![Packet::Noop, Packet::Close])
        );
    }

    #[test]
    fn the_handshake_is_what_the_official_client_reads() {
        let open = Packet::Open(OpenPayload {
            sid: "lv_VI97HAXpY6yYWAAAC".to_owned(),
            upgrades: vec!["websocket".to_owned()],
            ping_interval: 25000,
            ping_timeout: 20000,
            max_payload: 1_000_000,
        });
        assert_eq!(
            open.encode_text(),
            r#"0{"sid":"lv_VI97HAXpY6yYWAAAC","upgrades":["websocket"],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}"#
        );
    }

    #[test]
    fn text_packets_follow_the_protocol_examples() {
        assert_eq!(
            Packet::decode_text("4hello"),
            Ok(Packet::Message(Message::Text("hello".to_owned())))
        );
        assert_eq!(
            Packet::decode_text("2probe"),
            Ok(Packet::Ping("probe".to_owned()))
        );
        assert_eq!(Packet::decode_text("3"), Ok(Packet::Pong(String::new())));
        assert_eq!(Packet::decode_text("5"), Ok(Packet::Upgrade));
        assert_eq!(Packet::decode_text("6"), Ok(Packet::Noop));
        assert_eq!(Packet::decode_text("1"), Ok(Packet::Close));
        assert_eq!(
            Packet::decode_text("bAQIDBA=="),
            Ok(Packet::Message(Message::Binary(Bytes::from_static(&[
                1, 2, 3, 4
            ]))))
        );
    }

    #[test]
    fn a_polling_payload_is_split_on_the_record_separator() {
        let packets = decode_payload("4hello\u{1e}2\u{1e}bAQIDBA==").expect("valid payload");
        assert_eq!(
            packets,
            vec![
                Packet::Message(Message::Text("hello".to_owned())),
                Packet::Ping(String::new()),
                Packet::Message(Message::Binary(Bytes::from_static(&[1, 2, 3, 4]))),
            ]
        );
        assert_eq!(encode_payload(&packets), "4hello\u{1e}2\u{1e}bAQIDBA==");
    }

    #[test]
    fn malformed_packets_are_typed_errors() {
        assert_eq!(Packet::decode_text(""), Err(DecodeError::Empty));
        assert_eq!(Packet::decode_text("9"), Err(DecodeError::UnknownType('9')));
        assert_eq!(Packet::decode_text("b***"), Err(DecodeError::InvalidBase64));
        assert_eq!(
            Packet::decode_text("1x"),
            Err(DecodeError::UnexpectedData('1'))
        );
        assert!(matches!(
            Packet::decode_text("0{"),
            Err(DecodeError::InvalidOpen(_))
        ));
        assert!(
            decode_payload("4ok\u{1e}").is_err(),
            "an empty record fails the payload"
        );
    }

    fn packet() -> impl Strategy<Value = Packet> {
        prop_oneof![
            Just(Packet::Close),
            Just(Packet::Upgrade),
            Just(Packet::Noop),
            "[^\u{1e}]*".prop_map(Packet::Ping),
            "[^\u{1e}]*".prop_map(Packet::Pong),
            "[^\u{1e}]*".prop_map(|text| Packet::Message(Message::Text(text))),
            proptest::collection::vec(any::<u8>(), 0..64)
                .prop_map(|bytes| Packet::Message(Message::Binary(Bytes::from(bytes)))),
            (
                "[a-zA-Z0-9_-]{1,24}",
                any::<u32>(),
                any::<u32>(),
                any::<u32>()
            )
                .prop_map(|(sid, a, b, c)| {
                    Packet::Open(OpenPayload {
                        sid,
                        upgrades: vec!["websocket".to_owned()],
                        ping_interval: u64::from(a),
                        ping_timeout: u64::from(b),
                        max_payload: u64::from(c),
                    })
                }),
        ]
    }

    proptest! {
        #[test]
        fn every_packet_survives_a_round_trip(packet in packet()) {
            prop_assert_eq!(Packet::decode_text(&packet.encode_text()), Ok(packet));
        }

        #[test]
        fn a_packets_payload_length_is_its_encoded_length_and_a_separator(packet in packet()) {
            prop_assert_eq!(packet.payload_len(), packet.encode_text().len() + 1);
        }

        #[test]
        fn every_payload_survives_a_round_trip(packets in proptest::collection::vec(packet(), 1..8)) {
            prop_assert_eq!(decode_payload(&encode_payload(&packets)), Ok(packets));
        }

        #[test]
        fn arbitrary_input_never_panics(text in "\\PC*") {
            let _ = Packet::decode_text(&text);
            let _ = decode_payload(&text);
        }
    }
}
