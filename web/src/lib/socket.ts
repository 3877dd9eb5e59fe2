// The one way the app opens a Socket.IO connection (DESIGN.md section 3). The server lives on the
// page's own origin, so a namespace path is enough; cookies travel with the handshake.
import { io, type Socket } from 'socket.io-client';

/** Where the server speaks Socket.IO. */
export const SOCKET_PATH = '/socket.io/';

/** An event map: event name to listener. Typed maps make `on`, `emit` and acks checked. */
type EventsMap = Record<string, (...args: never[]) => void>;

export type HandshakeAuth = Record<string, string>;

/**
 * Opens (and keeps reopening, as socket.io-client does by itself) a socket to `namespace`.
 * The caller owns it and must `disconnect()` it when done.
 */
export function connectNamespace<ServerEvents extends EventsMap, ClientEvents extends EventsMap>(
  namespace: string,
  auth: HandshakeAuth,
): Socket<ServerEvents, ClientEvents> {
  return io(namespace, { path: SOCKET_PATH, auth, withCredentials: true });
}
