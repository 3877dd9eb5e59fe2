//! A visitor's `/funnel` socket for the tests (the load generator's client): join a funnel, wait
//! for an event or an acknowledgement, send a message and read the reply.

use std::time::Duration;

use helpnow::loadtest::client::{Client, ClientError, Target, ack_of, event_of};
use serde_json::{Value, json};

/// How long a test waits for a join, an event or an acknowledgement.
const PATIENCE: Duration = Duration::from_secs(30);

/// The socket address of a server at `address` (`http://host:port`).
pub fn target_at(address: &str) -> Target {
    let url = url::Url::parse(address).expect("address");
    let host = format!(
        "{}:{}",
        url.host_str().expect("host"),
        url.port().expect("port")
    );
    Target {
        address: host.parse().expect("a socket address"),
        host,
    }
}

/// Connects to `/funnel` with `auth` (and a cookie header's value): the socket, or the refusal.
pub async fn connect(
    target: &Target,
    auth: &Value,
    cookie: Option<&str>,
) -> Result<Client, ClientError> {
    let local = std::net::IpAddr::from([127, 0, 0, 1]);
    Client::connect(target, local, "/funnel", auth, cookie, PATIENCE).await
}

/// A joined socket and the `conversation` event it was given.
pub async fn join(target: &Target, auth: &Value, cookie: Option<&str>) -> (Client, Value) {
    let mut client = connect(target, auth, cookie)
        .await
        .expect("the visitor joins");
    let conversation = next_event(&mut client, "conversation").await;
    (client, conversation)
}

/// The data of the next `name` event (others are skipped), at most 30 s away.
pub async fn next_event(client: &mut Client, name: &str) -> Value {
    tokio::time::timeout(PATIENCE, async {
        loop {
            let packet = client.next_packet().await.expect("a packet");
            if let Some((event, data)) = event_of(&packet)
                && event == name
            {
                return data.clone();
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {name} event within 30 s"))
}

/// The answer to the acknowledgement `id`, at most 30 s away.
pub async fn ack(client: &mut Client, id: u64) -> Value {
    tokio::time::timeout(PATIENCE, async {
        loop {
            let packet = client.next_packet().await.expect("a packet");
            if let Some(ack) = ack_of(&packet, id) {
                return ack.clone();
            }
        }
    })
    .await
    .expect("acknowledged within 30 s")
}

/// Sends `text` and waits for the acknowledgement that it is stored.
pub async fn send(client: &mut Client, text: &str) {
    let id = client
        .emit_with_ack("send", json!({ "text": text }))
        .await
        .expect("sent");
    let answer = ack(client, id).await;
    assert_eq!(answer["ok"], true, "{answer}");
}

/// Sends `text`, waits until it is stored, then for the assistant's reply: the reply.
pub async fn exchange(client: &mut Client, text: &str) -> Value {
    send(client, text).await;
    let reply = next_event(client, "message").await;
    assert_eq!(reply["role"], "assistant", "{reply}");
    reply
}
