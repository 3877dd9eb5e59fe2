import { vi } from 'vitest';

type Reply = { status?: number; body: unknown };
type Handler = Reply | ((init: RequestInit | undefined, url: URL) => Reply | Promise<Reply>);

export const SHORTCUT_NAMES = [
  'Yahoo Mail', 'YouTube', 'Gmail', 'AOL', 'Facebook', 'X', 'Instagram', 'Zoom', 'TikTok', 'WhatsApp',
  'LinkedIn', 'Snapchat', 'ProtonMail', 'Pinterest', 'Reddit', 'WeChat', 'Telegram', 'Skype', 'Slack',
  'Vimeo', 'Tumblr', 'Discord', 'Signal', 'Viber',
];

export const defaultApi: Record<string, Handler> = {
  'GET /api/auth/me': { body: { user: null } },
  'GET /api/public-config': {
    body: { productName: 'HelpNow', assistantName: 'Emma', supportEmail: 'support@helpnow.example', debugTools: true },
  },
  'GET /api/shortcuts': {
    body: {
      shortcuts: SHORTCUT_NAMES.map((name) => ({
        name,
        icon: `/icons/${name.toLowerCase().replace(/\s+/g, '-')}.svg`,
        url: `https://example.com/${encodeURIComponent(name)}`,
      })),
    },
  },
};

/** Replaces global fetch with canned answers keyed by "METHOD /path"; anything else is a JSON 404. */
export function mockApi(overrides: Record<string, Handler> = {}) {
  const handlers = { ...defaultApi, ...overrides };
  const fetchMock = vi.fn<typeof fetch>(async (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url, 'http://localhost');
    const key = `${(init?.method ?? 'GET').toUpperCase()} ${url.pathname}`;
    const handler = handlers[key];
    const reply: Reply = handler
      ? typeof handler === 'function'
        ? await handler(init, url)
        : handler
      : { status: 404, body: { error: 'not_found', message: 'Not found' } };
    return new Response(JSON.stringify(reply.body), {
      status: reply.status ?? 200,
      headers: { 'Content-Type': 'application/json' },
    });
  });
  vi.stubGlobal('fetch', fetchMock);
  return fetchMock;
}
