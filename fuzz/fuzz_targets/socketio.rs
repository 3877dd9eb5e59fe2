//! Any bytes as a Socket.IO packet: decoding may fail, never panic, and whatever decodes encodes
//! back to a packet that decodes to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../src/realtime/socketio.rs"]
#[allow(dead_code)]
mod socketio;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(packet) = socketio::Packet::decode(text) {
        assert_eq!(socketio::Packet::decode(&packet.encode()), Ok(packet));
    }
});
