// Events the browser reports (`POST /api/events`). The server records the rest itself, among them
// `chat_message_sent` and `new_chat_started` (when a first message creates a chat), and refuses
// them from a browser, so the page never sends those.
import { api } from './api';

export type MemberEvent = 'members_area' | 'sidebar_opened' | 'feature_use';

/** Fire and forget: analytics never gets in the member's way. */
export function recordEvent(name: MemberEvent, properties?: Record<string, string>): void {
  const body: Record<string, unknown> = { name, path: window.location.pathname };
  if (properties) body.properties = properties;
  api.post<unknown>('/api/events', body).catch(() => {
    // Lost events are acceptable; the member's page is not.
  });
}

/**
 * A page view of a navigation inside the app: the server records the page a browser loads, and
 * the app each page it moves to after that (so no view is counted twice).
 */
export function recordPageView(path: string): void {
  api.post<unknown>('/api/events', { name: 'page_view', path }).catch(() => {
    // As above: a lost page view never gets in the way.
  });
}
