import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { vi } from 'vitest';
import { mockApi } from '../../test/fetch-mock';
import { browserLocation } from '../../lib/browser';
import { ChatFunnelPage } from './ChatFunnelPage';
import { PREVIEW_BANNER, PREVIEW_CHECKOUT, previewId } from './preview';
import type { FakeSocket, SocketOptions } from '../../test/fake-socket';

const sockets = vi.hoisted(() => [] as FakeSocket[]);

vi.mock('socket.io-client', async () => {
  const { FakeSocket } = await import('../../test/fake-socket');
  return {
    io: (namespace: string, options: SocketOptions) => {
      const socket = new FakeSocket(namespace, options);
      sockets.push(socket);
      return socket;
    },
  };
});

const GREETING = {
  role: 'assistant',
  text: "Hi, I'm Emma. What can I help you with today?",
  isFinal: false,
  showSubscribeButton: false,
};

function conversation(overrides: Record<string, unknown> = {}) {
  return {
    id: 'c1',
    funnel: 'chat',
    headline: 'Need Help? Get Instant Expert Assistance Now!',
    stage: 0,
    final: false,
    typing: false,
    messages: [GREETING],
    ...overrides,
  };
}

const FINAL = {
  role: 'assistant',
  text: 'Our experts can walk you through every step. Start now for full access.',
  isFinal: true,
  showSubscribeButton: true,
};

function renderFunnel(path = '/chat-help') {
  const router = createMemoryRouter(
    [
      { path: '/chat-help', element: <ChatFunnelPage key="chat" funnel="chat" /> },
      { path: '/Chat-Help-2', element: <ChatFunnelPage key="refundable" funnel="refundable" /> },
      { path: '/email-help', element: <ChatFunnelPage key="email" funnel="chat" defaultKeyword="email" /> },
    ],
    { initialEntries: [path] },
  );
  render(<RouterProvider router={router} />);
  return router;
}

function socket(): FakeSocket {
  const latest = sockets[sockets.length - 1];
  if (!latest) throw new Error('the page opened no socket');
  return latest;
}

function server(event: string, ...args: unknown[]) {
  act(() => socket().serverEmit(event, ...args));
}

function input() {
  return screen.getByPlaceholderText('Type your question here...') as HTMLTextAreaElement;
}

function sendButton() {
  return within(screen.getByRole('region', { name: /Instant Online Help/ })).getByRole('button', {
    name: /^(Send|\.\.\.)$/,
  }) as HTMLButtonElement;
}

function type(text: string) {
  fireEvent.change(input(), { target: { value: text } });
}

function messageTexts() {
  return Array.from(document.querySelectorAll('.chat-message__text')).map((node) => node.textContent);
}

function watchRedirects() {
  return vi.spyOn(browserLocation, 'assign').mockImplementation(() => {});
}

beforeEach(() => {
  sockets.length = 0;
});

afterEach(() => {
  vi.useRealTimers();
});

describe('ChatFunnelPage', () => {
  it('connects to /funnel with the campaign parameters and remembers them', async () => {
    const fetchMock = mockApi({ 'POST /api/events': { status: 201, body: { id: 'e1' } } });
    renderFunnel('/chat-help?keyword=yahoo%20mail&campaignid=123&utm_source=google&gclid=g1&other=x');

    expect(socket().namespace).toBe('/funnel');
    expect(socket().options).toEqual({
      path: '/socket.io/',
      withCredentials: true,
      auth: { funnel: 'chat', keyword: 'yahoo mail', campaignid: '123', utm_source: 'google', gclid: 'g1' },
    });
    expect(JSON.parse(window.localStorage.getItem('utm_params') ?? 'null')).toMatchObject({
      keyword: 'yahoo mail',
      campaignid: '123',
      utm_source: 'google',
      utm_medium: null,
      gclid: 'g1',
      first_visit_timestamp: expect.any(String),
    });

    await waitFor(() => expect(fetchMock.mock.calls.some(([url]) => url === '/api/events')).toBe(true));
    const views = fetchMock.mock.calls.filter(([url]) => url === '/api/events');
    expect(views).toHaveLength(1);
    expect(JSON.parse(String(views[0][1]?.body))).toEqual({
      name: 'chatbot_funnel_view',
      // Every campaign field of the address: the dashboard's UTM breakdowns need them too.
      properties: {
        keyword: 'yahoo mail',
        campaignid: '123',
        utm_source: 'google',
        utm_medium: null,
        utm_campaign: null,
        gclid: 'g1',
      },
      path: '/chat-help',
    });
  });

  it('runs the refundable funnel on /Chat-Help-2 and counts its own page view', async () => {
    const fetchMock = mockApi({ 'POST /api/events': { status: 500, body: {} } });
    renderFunnel('/Chat-Help-2');

    expect(socket().options.auth).toEqual({ funnel: 'refundable' });
    expect(screen.getByRole('heading', { level: 1 }).textContent).toBe('Need Help? Get Instant Expert Help Now!');
    await waitFor(() => {
      const view = fetchMock.mock.calls.find(([url]) => url === '/api/events');
      expect(JSON.parse(String(view?.[1]?.body))).toEqual({
        name: 'refundable_fee_funnel_view',
        properties: {
          keyword: null,
          campaignid: null,
          utm_source: null,
          utm_medium: null,
          utm_campaign: null,
          gclid: null,
        },
        path: '/Chat-Help-2',
      });
    });
  });

  it('takes email as the keyword on /email-help unless the query names one', () => {
    mockApi();
    renderFunnel('/email-help');
    expect(socket().options.auth).toEqual({ funnel: 'chat', keyword: 'email' });
    expect(screen.getByRole('heading', { level: 1 }).textContent).toBe(
      'Need Email Assistance? Get Instant Expert Assistance Now',
    );
    // The default is not the visitor's campaign data.
    expect(JSON.parse(window.localStorage.getItem('utm_params') ?? 'null').keyword).toBeNull();
  });

  it("shows the local headline until the server's arrives", () => {
    mockApi();
    renderFunnel('/email-help?keyword=outlook');
    expect(screen.getByRole('heading', { level: 1 }).textContent).toBe(
      'Need Outlook Assistance? Get Instant Expert Assistance Now',
    );
    server('conversation', conversation({ headline: 'Need Outlook Help Today?' }));
    expect(screen.getByRole('heading', { level: 1 }).textContent).toBe('Need Outlook Help Today?');
  });

  it('shows the window heading, the assistant and the greeting', () => {
    mockApi();
    renderFunnel();
    expect(screen.getByText('Connecting you to Emma…')).toBeTruthy();

    server('conversation', conversation());
    expect(screen.getByRole('heading', { level: 2, name: 'HelpNow Instant Online Help: Connected' })).toBeTruthy();
    expect(screen.getByText('Emma, Personal Chat Assistant')).toBeTruthy();
    expect(messageTexts()).toEqual([GREETING.text]);
    expect(screen.queryByText('Connecting you to Emma…')).toBeNull();
  });

  it('replaces the whole conversation with each one the server sends', () => {
    mockApi();
    renderFunnel();
    server('conversation', conversation({ messages: [GREETING, { ...GREETING, role: 'user', text: 'old question' }] }));
    expect(messageTexts()).toEqual([GREETING.text, 'old question']);

    server('conversation', conversation({ messages: [{ ...GREETING, text: 'Welcome back!' }] }));
    expect(messageTexts()).toEqual(['Welcome back!']);
  });

  it('sends a message, shows it once the server took it, and is busy until the reply', async () => {
    mockApi();
    renderFunnel();
    server('conversation', conversation());

    type('My printer is offline  ');
    fireEvent.click(sendButton());
    expect(socket().emitted('send')).toEqual([{ text: 'My printer is offline' }]);
    expect(sendButton().textContent).toBe('...');
    // Not shown before the server has it.
    expect(messageTexts()).toEqual([GREETING.text]);

    // A second send while the first waits goes nowhere.
    fireEvent.keyDown(input(), { key: 'Enter' });
    expect(socket().emitted('send')).toHaveLength(1);

    await act(async () => socket().takeAck('send').answer({ ok: true }));
    expect(messageTexts()).toEqual([GREETING.text, 'My printer is offline']);
    expect(input().value).toBe('');
    expect(sendButton().textContent).toBe('...');

    type('and another thing');
    fireEvent.click(sendButton());
    expect(socket().emitted('send')).toHaveLength(1);

    server('typing', { active: true });
    expect(screen.getByRole('status').textContent).toBe('Emma is typing...');
    server('typing', { active: false });
    server('message', { role: 'assistant', text: 'Sorry to hear that!', isFinal: false, showSubscribeButton: false });
    expect(screen.queryByText('Emma is typing')).toBeNull();
    expect(messageTexts()).toEqual([GREETING.text, 'My printer is offline', 'Sorry to hear that!']);
    expect(sendButton().textContent).toBe('Send');
    expect(input().value).toBe('and another thing');
  });

  it("shows the server's refusal and keeps the text", async () => {
    mockApi();
    renderFunnel();
    server('conversation', conversation());
    type('x'.repeat(20));
    fireEvent.click(sendButton());
    await act(async () =>
      socket().takeAck('send').answer({ ok: false, code: 'too_long', error: 'Please keep your message shorter.' }),
    );
    expect(screen.getByRole('alert').textContent).toBe('Please keep your message shorter.');
    expect(input().value).toBe('x'.repeat(20));
    expect(sendButton().textContent).toBe('Send');
    expect(messageTexts()).toEqual([GREETING.text]);
  });

  it('says so in plain words when the server does not answer within 10 seconds', async () => {
    mockApi();
    renderFunnel();
    server('conversation', conversation());
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    type('Hello?');
    fireEvent.click(sendButton());

    await act(() => vi.advanceTimersByTimeAsync(9_999));
    expect(screen.queryByRole('alert')).toBeNull();
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(screen.getByRole('alert').textContent).toBe(
      "We couldn't send your message. Please check your internet connection and try again.",
    );
    expect(input().value).toBe('Hello?');
    expect(sendButton().textContent).toBe('Send');
  });

  it('sends on Enter and leaves Shift+Enter to make a new line', () => {
    mockApi();
    renderFunnel();
    server('conversation', conversation());
    type('first line');

    expect(fireEvent.keyDown(input(), { key: 'Enter', shiftKey: true })).toBe(true);
    expect(socket().emitted('send')).toEqual([]);

    expect(fireEvent.keyDown(input(), { key: 'Enter' })).toBe(false);
    expect(socket().emitted('send')).toEqual([{ text: 'first line' }]);
  });

  it('strips leading whitespace while typing and keeps Send off for an empty field', () => {
    mockApi();
    renderFunnel();
    server('conversation', conversation());
    expect(sendButton().disabled).toBe(true);

    type('   \n  hello there');
    expect(input().value).toBe('hello there');
    expect(sendButton().disabled).toBe(false);

    type('   ');
    expect(input().value).toBe('');
    expect(sendButton().disabled).toBe(true);
    fireEvent.keyDown(input(), { key: 'Enter' });
    expect(socket().emitted('send')).toEqual([]);
  });

  it('offers Get started on the final message, ignores sends, and goes to the checkout it gets', async () => {
    const assign = watchRedirects();
    mockApi();
    renderFunnel();
    server('conversation', conversation({ stage: 2, final: true, messages: [GREETING, FINAL] }));
    // The field closes: what the visitor would type there could not be sent.
    expect((screen.getByRole('textbox', { name: 'Your question' }) as HTMLTextAreaElement).disabled).toBe(true);

    type('one more question');
    fireEvent.click(sendButton());
    expect(socket().emitted('send')).toEqual([]);

    fireEvent.click(screen.getByRole('button', { name: 'Get started >>' }));
    expect(socket().emitted('checkout')).toEqual([{}]);
    expect((screen.getByRole('button', { name: 'Get started >>' }) as HTMLButtonElement).disabled).toBe(true);
    expect(sendButton().disabled).toBe(true);
    expect(screen.getByText('Taking you to the secure checkout…')).toBeTruthy();

    await act(async () => socket().takeAck('checkout').answer({ url: '/api/funnels/checkout/abc' }));
    expect(assign).toHaveBeenCalledExactlyOnceWith('/api/funnels/checkout/abc');
  });

  it("takes the silent fallback when the checkout's answer is an error", async () => {
    const assign = watchRedirects();
    mockApi();
    renderFunnel();
    server('conversation', conversation({ final: true, messages: [GREETING, FINAL] }));
    fireEvent.click(screen.getByRole('button', { name: 'Get started >>' }));
    await act(async () => socket().takeAck('checkout').answer({ error: 'Checkout is unavailable' }));
    expect(assign).toHaveBeenCalledExactlyOnceWith('/?success=demo');
  });

  it('shows the Get started button on a final message that arrives live', () => {
    mockApi();
    renderFunnel();
    server('conversation', conversation());
    expect(screen.queryByRole('button', { name: 'Get started >>' })).toBeNull();
    server('message', FINAL);
    expect(screen.getByRole('button', { name: 'Get started >>' })).toBeTruthy();
  });

  it('back from a canceled checkout, keeps the conversation and its campaign, and says nothing was charged', async () => {
    mockApi();
    const router = renderFunnel('/Chat-Help-2?keyword=printer&campaignid=555&canceled=true');
    server('conversation', conversation({ stage: 2, final: true, messages: [GREETING, FINAL] }));
    expect(screen.getByRole('button', { name: 'Get started >>' })).toBeTruthy();
    expect(screen.getAllByRole('status').map((status) => status.textContent)).toContain(
      'Your checkout was canceled, and nothing was charged. Your conversation is still here.',
    );
    await waitFor(() => expect(router.state.location.search).toBe('?keyword=printer&campaignid=555'));
    // One connection: tidying the address does not reconnect.
    expect(sockets).toHaveLength(1);
  });

  it('counts down to the automatic checkout the server announces, with focus on Get started', async () => {
    mockApi();
    renderFunnel();
    server('conversation', conversation());
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    server('message', FINAL);
    const button = screen.getByRole('button', { name: 'Get started >>' });
    expect(document.activeElement).toBe(button);
    expect(screen.getByText('Press ‘Get started >>’ above to continue.')).toBeTruthy();

    server('countdown', { checkoutInMs: 15_000 });
    expect(screen.getByRole('timer').textContent).toBe(
      'Taking you to the secure checkout in 15 s. Press ‘Get started >>’ to go now.',
    );
    await act(() => vi.advanceTimersByTimeAsync(5_000));
    expect(screen.getByRole('timer').textContent).toContain('in 10 s.');
    await act(() => vi.advanceTimersByTimeAsync(9_900));
    expect(screen.getByRole('timer').textContent).toContain('in 1 s.');
  });

  it("follows the server's automatic checkout, then the 10 s and 2 s safety net", async () => {
    const assign = watchRedirects();
    mockApi();
    renderFunnel();
    server('conversation', conversation({ final: true, messages: [GREETING, FINAL] }));
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });

    server('checkout', { url: '/api/funnels/checkout/auto1' });
    expect(assign.mock.calls).toEqual([['/api/funnels/checkout/auto1']]);

    await act(() => vi.advanceTimersByTimeAsync(9_999));
    expect(assign).toHaveBeenCalledTimes(1);
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(assign.mock.calls[1]).toEqual(['/?success=demo']);
    await act(() => vi.advanceTimersByTimeAsync(1_999));
    expect(assign).toHaveBeenCalledTimes(2);
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(assign.mock.calls).toEqual([['/api/funnels/checkout/auto1'], ['/?success=demo'], ['/?success=demo']]);

    // The button cannot start a second checkout.
    fireEvent.click(screen.getByRole('button', { name: 'Get started >>' }));
    expect(socket().emitted('checkout')).toEqual([]);
  });

  it('falls back when the checkout button gets no answer', async () => {
    const assign = watchRedirects();
    mockApi();
    renderFunnel();
    server('conversation', conversation({ final: true, messages: [GREETING, FINAL] }));
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });

    fireEvent.click(screen.getByRole('button', { name: 'Get started >>' }));
    await act(() => vi.advanceTimersByTimeAsync(7_999));
    expect(assign).not.toHaveBeenCalled();
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(assign.mock.calls).toEqual([['/?success=demo']]);
    await act(() => vi.advanceTimersByTimeAsync(2_000));
    expect(assign.mock.calls).toEqual([['/?success=demo'], ['/?success=demo']]);
  });

  it('keeps the conversation on screen while reconnecting, and takes the new one after', () => {
    mockApi();
    renderFunnel();
    server('connect');
    server('conversation', conversation());

    server('disconnect', 'transport close');
    expect(screen.getByText('Connection lost. Reconnecting…')).toBeTruthy();
    expect(messageTexts()).toEqual([GREETING.text]);

    server('connect_error', new Error('xhr poll error'));
    expect(screen.getByText('Connection lost. Reconnecting…')).toBeTruthy();
    expect(screen.queryByText('xhr poll error')).toBeNull();

    server('connect');
    server('conversation', conversation({ messages: [GREETING, FINAL] }));
    expect(screen.queryByText('Connection lost. Reconnecting…')).toBeNull();
    expect(messageTexts()).toEqual([GREETING.text, FINAL.text]);
  });

  it("shows the server's refusal as is and offers to try again", () => {
    mockApi();
    renderFunnel();
    socket().active = false;
    server('connect_error', new Error('Too many chats from this address. Please try again later.'));
    expect(screen.getByRole('alert').textContent).toContain(
      'Too many chats from this address. Please try again later.',
    );

    fireEvent.click(screen.getByRole('button', { name: 'Try again' }));
    expect(socket().connectCalls).toBe(1);
    expect(screen.queryByRole('alert')).toBeNull();
  });

  it("shows the server's notice above the input and lets the visitor write again", async () => {
    mockApi();
    renderFunnel();
    server('conversation', conversation());
    type('help');
    fireEvent.click(sendButton());
    await act(async () => socket().takeAck('send').answer({ ok: true }));
    expect(sendButton().textContent).toBe('...');

    server('notice', { code: 'ai_unavailable', text: 'Our assistant is busy. Please try again in a moment.' });
    expect(screen.getByText('Our assistant is busy. Please try again in a moment.')).toBeTruthy();
    expect(sendButton().textContent).toBe('Send');
  });

  it("adds the visitor's message from another tab and waits for its answer", () => {
    mockApi();
    renderFunnel();
    server('conversation', conversation());
    server('message', { role: 'user', text: 'from my phone', isFinal: false, showSubscribeButton: false });
    expect(messageTexts()).toEqual([GREETING.text, 'from my phone']);
    expect(sendButton().textContent).toBe('...');
  });

  it('closes the socket when the page goes away', () => {
    mockApi();
    const router = renderFunnel();
    act(() => {
      void router.navigate('/Chat-Help-2');
    });
    expect(sockets).toHaveLength(2);
    expect(sockets[0].closedByClient).toBe(true);
    expect(sockets[1].options.auth).toEqual({ funnel: 'refundable' });
  });

  it('opens the legal dialogs from its footer', async () => {
    mockApi({
      'GET /api/legal/refund': { body: { slug: 'refund', title: 'Refund Policy', body: 'Refunds within 7 days.' } },
    });
    renderFunnel();
    fireEvent.click(screen.getByRole('button', { name: 'Refund Policy' }));
    const dialog = await screen.findByRole('dialog', { name: 'Refund Policy' });
    expect(await within(dialog).findByText('Refunds within 7 days.')).toBeTruthy();
    for (const name of ['Privacy Policy', 'Terms & Conditions', 'Contact Us']) {
      expect(screen.getByRole('button', { name })).toBeTruthy();
    }
  });
});

describe('ChatFunnelPage as the preview of a draft flow', () => {
  const PREVIEW_URL = '/api/funnels/checkout/preview1';

  it('carries the preview in the handshake, says it is a preview, and counts and keeps nothing', async () => {
    const fetchMock = mockApi({ 'POST /api/events': { status: 201, body: { id: 'e1' } } });
    renderFunnel('/chat-help?preview=pv_123&keyword=printer%20offline&campaignid=77');

    expect(socket().options.auth).toEqual({
      funnel: 'chat',
      keyword: 'printer offline',
      campaignid: '77',
      preview: 'pv_123',
    });
    expect(screen.getByText(PREVIEW_BANNER)).toBeTruthy();
    server('conversation', conversation());
    expect(messageTexts()).toEqual([GREETING.text]);
    // Everything else is the real page: its headline from the keyword, its chat.
    expect(screen.getByRole('heading', { level: 2, name: 'HelpNow Instant Online Help: Connected' })).toBeTruthy();

    await act(async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
    });
    expect(fetchMock.mock.calls.filter(([url]) => url === '/api/events')).toEqual([]);
    expect(window.localStorage.getItem('utm_params')).toBeNull();
  });

  it('runs the refundable funnel too, with its own preview', () => {
    mockApi();
    renderFunnel('/Chat-Help-2?preview=pv9');
    expect(socket().options.auth).toEqual({ funnel: 'refundable', preview: 'pv9' });
    expect(screen.getByText(PREVIEW_BANNER)).toBeTruthy();
  });

  it('shows no banner and sends no preview on the real page', () => {
    mockApi();
    renderFunnel('/chat-help?preview=%20%20');
    expect(socket().options.auth).toEqual({ funnel: 'chat' });
    expect(screen.queryByText(PREVIEW_BANNER)).toBeNull();
  });

  it('stays on the page where the button would open the checkout, whatever the timers', async () => {
    const assign = watchRedirects();
    mockApi();
    renderFunnel('/chat-help?preview=pv1');
    server('conversation', conversation({ final: true, messages: [GREETING, FINAL] }));
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });

    fireEvent.click(screen.getByRole('button', { name: 'Get started >>' }));
    expect(socket().emitted('checkout')).toEqual([{}]);
    await act(async () => socket().takeAck('checkout').answer({ url: PREVIEW_URL }));
    expect(screen.getAllByRole('status').map((status) => status.textContent)).toContain(PREVIEW_CHECKOUT);
    expect(screen.queryByText('Taking you to the secure checkout…')).toBeNull();

    await act(() => vi.advanceTimersByTimeAsync(30_000));
    expect(assign).not.toHaveBeenCalled();
  });

  it('stays on the page when the checkout button gets no answer', async () => {
    const assign = watchRedirects();
    mockApi();
    renderFunnel('/chat-help?preview=pv1');
    server('conversation', conversation({ final: true, messages: [GREETING, FINAL] }));
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });

    fireEvent.click(screen.getByRole('button', { name: 'Get started >>' }));
    await act(() => vi.advanceTimersByTimeAsync(30_000));
    expect(assign).not.toHaveBeenCalled();
    expect(screen.getByText(PREVIEW_CHECKOUT)).toBeTruthy();
  });

  it("stays on the page at the server's automatic checkout", async () => {
    const assign = watchRedirects();
    mockApi();
    renderFunnel('/chat-help?preview=pv1');
    server('conversation', conversation({ final: true, messages: [GREETING, FINAL] }));
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });

    server('checkout', { url: PREVIEW_URL });
    expect(screen.getByText(PREVIEW_CHECKOUT).getAttribute('role')).toBe('status');
    await act(() => vi.advanceTimersByTimeAsync(30_000));
    expect(assign).not.toHaveBeenCalled();
    // The button cannot start a second one.
    fireEvent.click(screen.getByRole('button', { name: 'Get started >>' }));
    expect(socket().emitted('checkout')).toEqual([]);
  });

  it('reads the preview id from the query', () => {
    expect(previewId('?preview=abc')).toBe('abc');
    expect(previewId('?preview=')).toBeNull();
    expect(previewId('?keyword=x')).toBeNull();
    expect(previewId(new URLSearchParams({ preview: ' p1 ' }))).toBe('p1');
  });
});
