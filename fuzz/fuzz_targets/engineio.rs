//! Any bytes as an Engine.IO text frame or polling payload: decoding may fail, never panic, and
//! whatever decodes encodes back to something that decodes to the same packets.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../src/realtime/engineio.rs"]
#[allow(dead_code)]
mod engineio;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(packet) = engineio::Packet::decode_text(text) {
        assert_eq!(engineio::Packet::decode_text(&packet.encode_text()), Ok(packet));
    }
    if let Ok(packets) = engineio::decode_payload(text) {
        assert_eq!(engineio::decode_payload(&engineio::encode_payload(&packets)), Ok(packets));
    }
});
