//! Socket.IO v5 packets, carried in Engine.IO message packets.
//!
//! Text form: `<type>[<attachments>-][<namespace>,][<ack id>][<JSON data>]`, for example
//! `2["message","hi"]`, `2/custom,["message"]`, `21["message-with-ack",1]` (ack id 1),
//! `451-["file",{"_placeholder":true,"num":0}]` (one binary attachment follows as its own frame).
//! The namespace is written only when it is not `/`.

use serde_json::Value;

/// The type digit of a Socket.IO packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketType {
    Connect,
    Disconnect,
    Event,
    Ack,
    ConnectError,
    BinaryEvent,
    BinaryAck,
}

impl PacketType {
    fn digit(self) -> char {
        match self {
            PacketType::Connect => '0',
            PacketType::Disconnect => '1',
            PacketType::Event => '2',
            PacketType::Ack => '3',
            PacketType::ConnectError => '4',
            PacketType::BinaryEvent => '5',
            PacketType::BinaryAck => '6',
        }
    }

    fn from_digit(digit: char) -> Option<Self> {
        Some(match digit {
            '0' => PacketType::Connect,
            '1' => PacketType::Disconnect,
            '2' => PacketType::Event,
            '3' => PacketType::Ack,
            '4' => PacketType::ConnectError,
            '5' => PacketType::BinaryEvent,
            '6' => PacketType::BinaryAck,
            _ => return None,
        })
    }

    pub fn is_binary(self) -> bool {
        matches!(self, PacketType::BinaryEvent | PacketType::BinaryAck)
    }
}

/// One Socket.IO packet. For the binary types `data` holds `{"_placeholder":true,"num":N}` where
/// each attachment goes, and `attachments` says how many binary frames follow the packet.
#[derive(Debug, Clone, PartialEq)]
pub struct Packet {
    pub kind: PacketType,
    pub namespace: String,
    pub ack_id: Option<u64>,
    pub data: Option<Value>,
    pub attachments: usize,
}

/// Longest namespace accepted; real ones are short names like `/funnel`.
pub const MAX_NAMESPACE_LEN: usize = 256;
/// Most binary attachments one packet may announce (socket.io-parser's `maxAttachments`).
pub const MAX_ATTACHMENTS: usize = 10;

/// Event names the reference keeps for itself: a client's event of one of these is invalid.
pub const RESERVED_EVENTS: [&str; 6] = [
    "connect",
    "connect_error",
    "disconnect",
    "disconnecting",
    "newListener",
    "removeListener",
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("empty packet")]
    Empty,
    #[error("unknown packet type {0:?}")]
    UnknownType(char),
    #[error("the attachment count is missing or not a number")]
    InvalidAttachments,
    #[error("too many attachments ({0})")]
    TooManyAttachments(usize),
    #[error("the namespace is not terminated or too long")]
    InvalidNamespace,
    #[error("the ack id is too large")]
    InvalidAckId,
    #[error("the data is not valid JSON: {0}")]
    InvalidJson(String),
    #[error("the data does not fit the packet type: {0}")]
    InvalidData(&'static str),
}

impl Packet {
    /// An EVENT (or BINARY_EVENT when it carries attachments) named `event` with `args`.
    pub fn event(
        namespace: &str,
        event: &str,
        args: Vec<Value>,
        ack_id: Option<u64>,
        attachments: usize,
    ) -> Self {
        let mut items = Vec::with_capacity(args.len() + 1);
        items.push(Value::String(event.to_owned()));
        items.extend(args);
        Packet {
            kind: if attachments > 0 {
                PacketType::BinaryEvent
            } else {
                PacketType::Event
            },
            namespace: namespace.to_owned(),
            ack_id,
            data: Some(Value::Array(items)),
            attachments,
        }
    }

    /// The text frame of this packet (its attachments, if any, follow as binary frames).
    pub fn encode(&self) -> String {
        // Room for a header and a small event (a streamed piece) without growing four times.
        let mut text = String::with_capacity(self.namespace.len() + 128);
        text.push(self.kind.digit());
        if self.kind.is_binary() {
            text.push_str(&self.attachments.to_string());
            text.push('-');
        }
        if self.namespace != "/" {
            text.push_str(&self.namespace);
            text.push(',');
        }
        if let Some(id) = self.ack_id {
            text.push_str(&id.to_string());
        }
        let Some(data) = &self.data else {
            return text;
        };
        // Written straight after the header, not formatted into a string of its own and copied.
        let mut bytes = text.into_bytes();
        if serde_json::to_writer(&mut bytes, data).is_err() {
            // A `Value` always serializes; kept total anyway.
            bytes.extend_from_slice(b"null");
        }
        String::from_utf8(bytes).unwrap_or_default()
    }

    /// Parses a text frame, checking that the data fits the packet type.
    pub fn decode(text: &str) -> Result<Packet, DecodeError> {
        let mut rest = text;
        let digit = rest.chars().next().ok_or(DecodeError::Empty)?;
        let kind = PacketType::from_digit(digit).ok_or(DecodeError::UnknownType(digit))?;
        rest = &rest[digit.len_utf8()..];

        let mut attachments = 0;
        if kind.is_binary() {
            let dash = rest.find('-').ok_or(DecodeError::InvalidAttachments)?;
            let count = &rest[..dash];
            // An overlong count fails to parse; a parsed one is capped just below.
            if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
                return Err(DecodeError::InvalidAttachments);
            }
            attachments = count.parse().map_err(|_| DecodeError::InvalidAttachments)?;
            if attachments > MAX_ATTACHMENTS {
                return Err(DecodeError::TooManyAttachments(attachments));
            }
            // A binary packet carries at least one attachment, as the reference decodes them.
            if attachments == 0 {
                return Err(DecodeError::InvalidAttachments);
            }
            rest = &rest[dash + 1..];
        }

        let namespace = if rest.starts_with('/') {
            let comma = rest.find(',');
            match comma {
                Some(end) if end <= MAX_NAMESPACE_LEN => {
                    let namespace = rest[..end].to_owned();
                    rest = &rest[end + 1..];
                    namespace
                }
                // `0/admin` (CONNECT with no data) ends without a comma.
                None if rest.len() <= MAX_NAMESPACE_LEN && !rest.contains(['[', '{', '"']) => {
                    let namespace = rest.to_owned();
                    rest = "";
                    namespace
                }
                _ => return Err(DecodeError::InvalidNamespace),
            }
        } else {
            "/".to_owned()
        };

        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let ack_id = if digits > 0 {
            let id = rest[..digits]
                .parse::<u64>()
                .map_err(|_| DecodeError::InvalidAckId)?;
            rest = &rest[digits..];
            Some(id)
        } else {
            None
        };

        let data = if rest.is_empty() {
            None
        } else {
            Some(
                serde_json::from_str::<Value>(rest)
                    .map_err(|err| DecodeError::InvalidJson(err.to_string()))?,
            )
        };

        let packet = Packet {
            kind,
            namespace,
            ack_id,
            data,
            attachments,
        };
        packet.check()?;
        Ok(packet)
    }

    /// What each type may carry, as the reference implementation checks it.
    fn check(&self) -> Result<(), DecodeError> {
        match self.kind {
            PacketType::Connect => match &self.data {
                None | Some(Value::Object(_)) => Ok(()),
                Some(_) => Err(DecodeError::InvalidData("CONNECT data must be an object")),
            },
            PacketType::Disconnect => match self.data {
                None => Ok(()),
                Some(_) => Err(DecodeError::InvalidData("DISCONNECT carries no data")),
            },
            PacketType::ConnectError => match &self.data {
                Some(Value::Object(_)) | Some(Value::String(_)) => Ok(()),
                _ => Err(DecodeError::InvalidData(
                    "CONNECT_ERROR data must be an object",
                )),
            },
            // The name is a string other than a reserved one, or a number (socket.io-parser's
            // isPayloadValid).
            PacketType::Event | PacketType::BinaryEvent => match &self.data {
                Some(Value::Array(items))
                    if matches!(items.first(), Some(Value::String(name)) if !RESERVED_EVENTS.contains(&name.as_str()))
                        || matches!(items.first(), Some(Value::Number(_))) =>
                {
                    self.check_placeholders()
                }
                _ => Err(DecodeError::InvalidData(
                    "EVENT data must be an array starting with the event name",
                )),
            },
            PacketType::Ack | PacketType::BinaryAck => match (&self.data, self.ack_id) {
                (Some(Value::Array(_)), Some(_)) => self.check_placeholders(),
                (_, None) => Err(DecodeError::InvalidData("ACK needs an ack id")),
                _ => Err(DecodeError::InvalidData("ACK data must be an array")),
            },
        }
    }

    /// Every placeholder points at an announced attachment.
    fn check_placeholders(&self) -> Result<(), DecodeError> {
        fn visit(value: &Value, attachments: usize, depth: usize) -> Result<(), DecodeError> {
            if depth > 64 {
                return Err(DecodeError::InvalidData("the data is nested too deeply"));
            }
            match value {
                Value::Object(map) if map.get("_placeholder") == Some(&Value::Bool(true)) => {
                    match map.get("num").and_then(Value::as_u64) {
                        Some(num) if (num as usize) < attachments => Ok(()),
                        _ => Err(DecodeError::InvalidData(
                            "a placeholder points at no attachment",
                        )),
                    }
                }
                Value::Object(map) => map
                    .values()
                    .try_for_each(|v| visit(v, attachments, depth + 1)),
                Value::Array(items) => items
                    .iter()
                    .try_for_each(|v| visit(v, attachments, depth + 1)),
                _ => Ok(()),
            }
        }
        match &self.data {
            Some(data) => visit(data, self.attachments, 0),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn decoded(text: &str) -> Packet {
        Packet::decode(text).unwrap_or_else(|err| panic!("{text}: {err}"))
    }

    #[test]
    fn the_protocol_examples_decode() {
        let connect = decoded("0");
        assert_eq!(
            (connect.kind, connect.namespace.as_str(), connect.data),
            (PacketType::Connect, "/", None)
        );

        let connect = decoded(r#"0/admin,{"token":"123"}"#);
        assert_eq!(connect.namespace, "/admin");
        assert_eq!(connect.data, Some(json!({"token": "123"})));

        assert_eq!(decoded("0/admin").namespace, "/admin");
        assert_eq!(decoded("1/admin,").kind, PacketType::Disconnect);

        let event = decoded(r#"2["foo",{"a":1}]"#);
        assert_eq!(event.data, Some(json!(["foo", {"a": 1}])));
        assert_eq!(event.ack_id, None);

        let with_ack = decoded(r#"2/admin,12["bar"]"#);
        assert_eq!(
            (with_ack.namespace.as_str(), with_ack.ack_id),
            ("/admin", Some(12))
        );

        let ack = decoded(r#"3/admin,13["bar"]"#);
        assert_eq!((ack.kind, ack.ack_id), (PacketType::Ack, Some(13)));

        let refused = decoded(r#"4{"message":"Not authorized"}"#);
        assert_eq!(refused.kind, PacketType::ConnectError);

        let binary = decoded(r#"51-["baz",{"_placeholder":true,"num":0}]"#);
        assert_eq!(
            (binary.kind, binary.attachments),
            (PacketType::BinaryEvent, 1)
        );

        let binary_ack = decoded(r#"61-/admin,15[{"_placeholder":true,"num":0}]"#);
        assert_eq!(
            (binary_ack.kind, binary_ack.attachments, binary_ack.ack_id),
            (PacketType::BinaryAck, 1, Some(15))
        );
    }

    #[test]
    fn encoding_writes_the_namespace_only_when_it_is_not_the_main_one() {
        assert_eq!(
            Packet::event("/", "message", vec![json!("hi")], None, 0).encode(),
            r#"2["message","hi"]"#
        );
        assert_eq!(
            Packet::event("/custom", "message", vec![], Some(3), 0).encode(),
            r#"2/custom,3["message"]"#
        );
        let binary = Packet::event(
            "/",
            "file",
            vec![json!({"_placeholder": true, "num": 0})],
            None,
            1,
        );
        assert_eq!(
            binary.encode(),
            r#"51-["file",{"_placeholder":true,"num":0}]"#
        );
    }

    #[test]
    fn numbers_are_relayed_exactly() {
        // Found by the fuzzer: without exact float parsing 1e42 came back as 9.999999999999999e41.
        let text = r#"51-["baz",{"num":999999999999999999999999999999999999999999}]"#;
        let once = decoded(text);
        assert_eq!(decoded(&once.encode()), once);
    }

    #[test]
    fn an_event_may_be_named_by_a_number() {
        let packet = decoded("2[1,\"two\"]");
        assert_eq!(packet.data, Some(serde_json::json!([1, "two"])));
    }

    #[test]
    fn packets_that_break_the_rules_are_refused() {
        for bad in [
            "",
            "7",
            "2",
            "2{}",
            "2[true]",
            r#"2["connect"]"#,
            r#"2["disconnecting"]"#,
            r#"2["removeListener",1]"#,
            r#"2["a""#,
            "3[]",
            r#"1["x"]"#,
            "0[]",
            "5[\"a\"]",
            "5x-[\"a\"]",
            "5999999-[\"a\"]",
            r#"51-["a",{"_placeholder":true,"num":1}]"#,
            r#"50-["a",{"_placeholder":true,"num":0}]"#,
            r#"50-["a"]"#,
            r#"511-["a"]"#,
            "2/never-terminated[\"a\"]",
            "299999999999999999999999[\"a\"]",
        ] {
            assert!(Packet::decode(bad).is_err(), "{bad:?} should be refused");
        }
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "\\PC{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    fn namespace() -> impl Strategy<Value = String> {
        prop_oneof![Just("/".to_owned()), "/[a-z][a-z0-9_-]{0,12}"]
    }

    fn packet() -> impl Strategy<Value = Packet> {
        prop_oneof![
            (
                namespace(),
                proptest::option::of(proptest::collection::btree_map(
                    "[a-z]{1,6}",
                    json_value(),
                    0..3
                ))
            )
                .prop_map(|(namespace, auth)| Packet {
                    kind: PacketType::Connect,
                    namespace,
                    ack_id: None,
                    data: auth.map(|map| Value::Object(map.into_iter().collect())),
                    attachments: 0,
                }),
            namespace().prop_map(|namespace| Packet {
                kind: PacketType::Disconnect,
                namespace,
                ack_id: None,
                data: None,
                attachments: 0,
            }),
            (
                namespace(),
                "[a-z:-]{1,12}",
                proptest::collection::vec(json_value(), 0..4),
                proptest::option::of(any::<u64>())
            )
                .prop_map(|(namespace, event, args, ack_id)| Packet::event(
                    &namespace, &event, args, ack_id, 0
                )),
            (
                namespace(),
                proptest::collection::vec(json_value(), 0..4),
                any::<u64>()
            )
                .prop_map(|(namespace, args, id)| Packet {
                    kind: PacketType::Ack,
                    namespace,
                    ack_id: Some(id),
                    data: Some(Value::Array(args)),
                    attachments: 0,
                }),
            (namespace(), 1usize..4, proptest::option::of(any::<u64>())).prop_map(
                |(namespace, count, ack_id)| {
                    let placeholders = (0..count)
                        .map(|num| json!({"_placeholder": true, "num": num}))
                        .collect();
                    Packet::event(&namespace, "upload", placeholders, ack_id, count)
                }
            ),
        ]
    }

    proptest! {
        #[test]
        fn every_packet_survives_a_round_trip(packet in packet()) {
            prop_assert_eq!(Packet::decode(&packet.encode()), Ok(packet));
        }

        #[test]
        fn arbitrary_input_never_panics(text in "\\PC*") {
            let _ = Packet::decode(&text);
        }

        #[test]
        fn input_that_looks_like_packets_never_panics(text in "[0-6][0-9-]{0,3}(/[a-z]{0,4},?)?[0-9]{0,3}[\\[\\]{}\",:a-z0-9_]{0,24}") {
            let _ = Packet::decode(&text);
        }
    }
}
