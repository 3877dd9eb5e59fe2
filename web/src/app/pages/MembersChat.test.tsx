import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { vi } from 'vitest';
import { renderApp } from '../testing';
import { mockApi } from '../../test/fetch-mock';
import type { User } from '../../lib/auth';
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

const GREETING = 'Hello! How can I help you today?';
const TRIAL = { hasAccess: true, trialActive: true, hasActiveSubscription: false, trialEndDate: '2030-01-08T12:00:00Z' };
const NO_ACCESS = { hasAccess: false, trialActive: false, hasActiveSubscription: false, trialEndDate: null };

function member(overrides: Partial<User> = {}): User {
  return { id: 'u1', email: 'ann@example.com', hasPassword: true, access: TRIAL, pendingSetup: null, ...overrides };
}

type Api = Parameters<typeof mockApi>[0];

const CHATS = {
  chats: [
    {
      id: 'c1',
      title: 'My printer says offline',
      listTitle: 'My printer says offline',
      preview: 'Turn the printer off and on again.',
      timestamp: '2029-03-04T12:00:00Z',
    },
    {
      id: 'c2',
      title: 'How do I attach a photo to an email?',
      listTitle: 'How do I attach a photo to a...',
      preview: 'Click the paper clip.',
      timestamp: '2029-02-01T12:00:00Z',
    },
  ],
};

const STORED_C1 = {
  chat: {
    id: 'c1',
    title: 'My printer says offline',
    timestamp: '2029-03-04T12:00:00Z',
    messages: [
      { id: 'g', role: 'assistant', content: GREETING, timestamp: '2029-03-04T11:59:00Z' },
      { id: 'u', role: 'user', content: 'My printer says offline', timestamp: '2029-03-04T11:59:30Z' },
      { id: 'a', role: 'assistant', content: 'Turn the printer off and on again.', timestamp: '2029-03-04T12:00:00Z' },
    ],
  },
};

async function openPage(user: User | null = member(), api: Api = {}) {
  const fetchMock = mockApi({
    'GET /api/auth/me': { body: { user } },
    'POST /api/events': { status: 201, body: { id: 'e1' } },
    'GET /api/chats': { body: { chats: [] } },
    'GET /api/tasks': { body: { tasks: [] } },
    ...api,
  });
  await renderApp('/');
  return fetchMock;
}

/** The page for a member with access, its socket connected. */
async function openConnected(api: Api = {}, user: User = member()) {
  const fetchMock = await openPage(user, api);
  await screen.findByRole('heading', { name: 'HelpNow AI assist, ask anything!' });
  await waitFor(() => expect(sockets.length).toBe(1));
  act(() => socket().serverConnect());
  return fetchMock;
}

function socket(): FakeSocket {
  const latest = sockets[sockets.length - 1];
  if (!latest) throw new Error('the page opened no socket');
  return latest;
}

function server(event: string, ...args: unknown[]) {
  act(() => socket().serverEmit(event, ...args));
}

async function answer(event: string, reply: unknown) {
  await act(async () => socket().takeAck(event).answer(reply));
}

function input() {
  return screen.getByRole('textbox', { name: 'Your question' }) as HTMLTextAreaElement;
}

function sendButton() {
  return screen.getByRole('button', { name: /^(Send Message|Sending\.\.\.)$/ }) as HTMLButtonElement;
}

function type(text: string) {
  fireEvent.change(input(), { target: { value: text } });
}

function conversation() {
  return screen.getByRole('log', { name: 'Conversation' });
}

function bubbles() {
  return Array.from(conversation().querySelectorAll('.member-chat__bubble')).map((bubble) =>
    (bubble.textContent ?? '').replace(/^(Emma:|You:)/, ''),
  );
}

function events(fetchMock: ReturnType<typeof mockApi>) {
  return fetchMock.mock.calls
    .filter(([url]) => url === '/api/events')
    .map(([, init]) => JSON.parse(String(init?.body)) as { name: string; properties?: Record<string, string> });
}

/** Sends `text` and answers its ack as the server does for a new chat. */
async function ask(text: string, chatId = 'c1') {
  type(text);
  fireEvent.click(sendButton());
  await answer('chat:send', { ok: true, chatId, messageId: 'm1', title: text });
}

beforeEach(() => {
  sockets.length = 0;
});

afterEach(() => {
  vi.useRealTimers();
});

describe('the members chat', () => {
  it('connects a member with access to /member and shows the greeting', async () => {
    const fetchMock = await openConnected();
    expect(socket().namespace).toBe('/member');
    expect(socket().options).toEqual({ path: '/socket.io/', auth: {}, withCredentials: true });
    expect(bubbles()).toEqual([GREETING]);

    server('chat:ready', { greeting: 'Welcome back! Still having trouble with your email?' });
    expect(bubbles()).toEqual(['Welcome back! Still having trouble with your email?']);

    await waitFor(() => expect(events(fetchMock).map((event) => event.name)).toEqual(['members_area']));
  });

  it('streams a reply: typing dots, pieces appended, then the whole text', async () => {
    await openConnected();
    type('My printer says offline');
    fireEvent.click(sendButton());

    expect(socket().emitted('chat:send')).toEqual([{ text: 'My printer says offline' }]);
    expect(sendButton().textContent).toBe('Sending...');
    expect(sendButton().disabled).toBe(true);
    expect(input().placeholder).toBe('Please wait...');
    expect(input().value).toBe('');
    expect(bubbles()).toEqual([GREETING, 'My printer says offline']);

    await answer('chat:send', { ok: true, chatId: 'c1', messageId: 'm1', title: 'My printer says offline' });
    server('chat:typing', { chatId: 'c1', messageId: 'm2' });
    expect(screen.getByTestId('chat-typing').textContent).toContain('Emma is typing');

    server('chat:delta', { chatId: 'c1', messageId: 'm2', text: 'Turn the printer ' });
    server('chat:delta', { chatId: 'c1', messageId: 'm2', text: 'off' });
    server('chat:delta', { chatId: 'other', messageId: 'x', text: 'SOMEONE ELSE' });
    expect(screen.queryByTestId('chat-typing')).toBeNull();
    expect(bubbles()[2]).toBe('Turn the printer off');

    server('chat:done', {
      chatId: 'c1',
      messageId: 'm2',
      text: 'Turn the printer **off** and on again.',
      title: 'My printer says offline',
      stopped: false,
    });
    expect(bubbles()).toEqual([GREETING, 'My printer says offline', 'Turn the printer off and on again.']);
    expect(conversation().querySelector('strong')?.textContent).toBe('off');
    expect(sendButton().textContent).toBe('Send Message');
    expect(input().placeholder).toBe('Type your question...');

    // Follow-ups go to the same chat.
    await act(async () => {
      type('It is still offline');
      fireEvent.click(sendButton());
    });
    expect(socket().emitted('chat:send')[1]).toEqual({ chatId: 'c1', text: 'It is still offline' });
  });

  it('sends with Enter, adds a line with Shift+Enter, and strips leading spaces', async () => {
    await openConnected();
    type('   How do I zoom in?');
    expect(input().value).toBe('How do I zoom in?');
    expect(sendButton().disabled).toBe(false);

    fireEvent.keyDown(input(), { key: 'Enter', shiftKey: true });
    expect(socket().emitted('chat:send')).toEqual([]);

    fireEvent.keyDown(input(), { key: 'Enter' });
    expect(socket().emitted('chat:send')).toEqual([{ text: 'How do I zoom in?' }]);
  });

  it('keeps Send Message disabled while the field is empty', async () => {
    await openConnected();
    expect(sendButton().disabled).toBe(true);
    type('   ');
    expect(sendButton().disabled).toBe(true);
  });

  it('stops a streaming reply', async () => {
    await openConnected();
    await ask('Tell me everything about Wi-Fi');
    server('chat:typing', { chatId: 'c1', messageId: 'm2' });
    server('chat:delta', { chatId: 'c1', messageId: 'm2', text: 'Wi-Fi is' });

    fireEvent.click(screen.getByRole('button', { name: 'Stop' }));
    expect(socket().emitted('chat:stop')).toEqual([{ chatId: 'c1' }]);
    // The Stop button is about to go: focus waits in the question field.
    expect(document.activeElement).toBe(input());
    await answer('chat:stop', { ok: true });
    server('chat:done', { chatId: 'c1', messageId: 'm2', text: 'Wi-Fi is', title: 'Wi-Fi', stopped: true });
    expect(bubbles()[2]).toBe('Wi-Fi is');
    expect(screen.queryByRole('button', { name: 'Stop' })).toBeNull();
  });

  it('shows a refusal by the input and gives the text back', async () => {
    await openConnected();
    type('Another question');
    fireEvent.click(sendButton());
    await answer('chat:send', { ok: false, code: 'busy', error: 'Please wait for the reply before sending another message.' });

    const form = input().closest('form')!;
    expect(within(form).getByRole('alert').textContent).toBe('Please wait for the reply before sending another message.');
    expect(input().value).toBe('Another question');
    expect(bubbles()).toEqual([GREETING]);
  });

  it('shows the error event as the assistant message', async () => {
    await openConnected();
    await ask('Why is my laptop slow?');
    server('chat:typing', { chatId: 'c1', messageId: 'm2' });
    server('chat:error', { chatId: 'c1', text: 'I apologize, but I encountered an error. Please try again.' });
    expect(bubbles()[2]).toBe('I apologize, but I encountered an error. Please try again.');
    expect(sendButton().textContent).toBe('Send Message');
  });

  it('opens the upgrade modal when the server says the trial has ended', async () => {
    const fetchMock = await openConnected();
    type('Hello?');
    fireEvent.click(sendButton());
    await answer('chat:send', { ok: false, code: 'upgrade_required', error: 'Start your trial to chat with your assistant.' });

    expect(screen.getByRole('dialog', { name: 'Get Unlimited AI Access!' })).toBeTruthy();
    expect(input().value).toBe('Hello?');
    // The access facts are asked for again.
    await waitFor(() => expect(fetchMock.mock.calls.filter(([url]) => url === '/api/auth/me').length).toBeGreaterThan(1));
  });

  it('opens the upgrade modal when the connection is refused for lack of access', async () => {
    await openPage(member());
    await waitFor(() => expect(sockets.length).toBe(1));
    act(() => socket().serverRefuse('Start your trial to chat with your assistant.', { code: 'upgrade_required' }));
    expect(await screen.findByRole('dialog', { name: 'Get Unlimited AI Access!' })).toBeTruthy();
  });

  it('says when the connection is lost and when it is back', async () => {
    await openConnected();
    act(() => socket().serverDrop());
    expect(screen.getByText('Connection lost. Reconnecting…')).toBeTruthy();
    act(() => socket().serverConnect({ recovered: true }));
    expect(screen.queryByText('Connection lost. Reconnecting…')).toBeNull();
  });

  it('starts a new chat with the greeting', async () => {
    await openConnected();
    server('chat:ready', { greeting: 'Hi again!' });
    await ask('First question');
    server('chat:done', { chatId: 'c1', messageId: 'm2', text: 'First answer', title: 'First question' });
    expect(bubbles()).toHaveLength(3);

    fireEvent.click(screen.getByRole('button', { name: 'New Chat' }));
    expect(bubbles()).toEqual(['Hi again!']);
    await act(async () => {
      type('Second question');
      fireEvent.click(sendButton());
    });
    expect(socket().emitted('chat:send')[1]).toEqual({ text: 'Second question' });
  });

  it('sends at once after New Chat while the last message still waits for its ack, and ignores that ack', async () => {
    await openConnected();
    type('First question');
    fireEvent.click(sendButton());
    expect(sendButton().textContent).toBe('Sending...');

    fireEvent.click(screen.getByRole('button', { name: 'New Chat' }));
    expect(bubbles()).toEqual([GREETING]);
    type('Second question');
    fireEvent.click(sendButton());
    expect(socket().emitted('chat:send')).toEqual([{ text: 'First question' }, { text: 'Second question' }]);
    expect(bubbles()).toEqual([GREETING, 'Second question']);

    // The first chat's refusal comes late: it has nothing to say in this one.
    await answer('chat:send', { ok: false, code: 'unavailable', error: 'Your message could not be saved just now.' });
    expect(within(input().closest('form')!).queryByRole('alert')).toBeNull();
    expect(input().value).toBe('');
    await answer('chat:send', { ok: true, chatId: 'c2', messageId: 'm1', title: 'Second question' });
    server('chat:done', { chatId: 'c2', messageId: 'm2', text: 'Second answer', title: 'Second question' });
    expect(bubbles()).toEqual([GREETING, 'Second question', 'Second answer']);
  });

  it('sends at once in a chat opened from History while the last message still waits for its ack', async () => {
    await openConnected({ 'GET /api/chats': { body: CHATS }, 'GET /api/chats/c1': { body: STORED_C1 } });
    type('A question for a new chat');
    fireEvent.click(sendButton());

    fireEvent.click(screen.getByRole('button', { name: 'History' }));
    const items = await within(screen.getByRole('complementary', { name: 'Chat History' })).findAllByRole('listitem');
    fireEvent.click(within(items[0]).getByRole('button', { name: /My printer says offline/ }));
    await waitFor(() => expect(bubbles()).toHaveLength(3));

    type('Still offline');
    fireEvent.click(sendButton());
    expect(socket().emitted('chat:send')[1]).toEqual({ chatId: 'c1', text: 'Still offline' });
    await answer('chat:send', { ok: true, chatId: 'c7', messageId: 'm1', title: 'A question for a new chat' });
    expect(bubbles()).toEqual([GREETING, 'My printer says offline', 'Turn the printer off and on again.', 'Still offline']);
  });

  it('does not connect a member without access; sending, History and task help open the upgrade modal', async () => {
    const taxes = {
      id: 't1',
      name: 'Taxes',
      timestamp: '2029-01-01T00:00:00Z',
      items: [{ id: 'i1', text: 'Find forms', completed: false }],
    };
    await openPage(member({ access: NO_ACCESS }), { 'GET /api/tasks': { body: { tasks: [taxes] } } });
    await screen.findByRole('heading', { name: 'HelpNow AI assist, ask anything!' });
    expect(sockets).toHaveLength(0);

    type('Can you help?');
    fireEvent.click(sendButton());
    const prompt = await screen.findByRole('dialog', { name: 'Get Unlimited AI Access!' });
    // The field gives the text back once the send is answered (a tick after the modal opens).
    await waitFor(() => expect(input().value).toBe('Can you help?'));
    fireEvent.click(within(prompt).getByRole('button', { name: 'Close' }));

    fireEvent.click(screen.getByRole('button', { name: 'History' }));
    const again = screen.getByRole('dialog', { name: 'Get Unlimited AI Access!' });
    fireEvent.click(within(again).getByRole('button', { name: 'Close' }));
    expect(screen.queryByRole('complementary', { name: 'Chat History' })).toBeNull();

    // Tasks are theirs to keep; the AI's help on one needs access.
    fireEvent.click(screen.getByRole('button', { name: 'Task List' }));
    fireEvent.click(await screen.findByRole('button', { name: 'Get AI assistance with Taxes' }));
    expect(screen.getByRole('dialog', { name: 'Get Unlimited AI Access!' })).toBeTruthy();
  });

  it('gives a visitor the upgrade modal for the chat and the sidebars', async () => {
    await openPage(null);
    await screen.findByRole('form', { name: 'Sign in' });
    expect(sockets).toHaveLength(0);
    type('Hello');
    fireEvent.keyDown(input(), { key: 'Enter' });
    const prompt = await screen.findByRole('dialog', { name: 'Get Unlimited AI Access!' });
    expect(within(prompt).getByRole('link', { name: 'Login to Continue' })).toBeTruthy();
    fireEvent.click(within(prompt).getByRole('button', { name: 'Close' }));

    fireEvent.click(screen.getByRole('button', { name: 'Task List' }));
    expect(screen.getByRole('dialog', { name: 'Get Unlimited AI Access!' })).toBeTruthy();
    expect(screen.queryByRole('complementary', { name: 'Task List' })).toBeNull();
  });
});

describe('the members chat across tabs and connections', () => {
  it("reloads the open chat when another tab's reply finishes, to show its question", async () => {
    let stored = STORED_C1;
    await openConnected({ 'GET /api/chats': { body: CHATS }, 'GET /api/chats/c1': () => ({ body: stored }) });
    fireEvent.click(screen.getByRole('button', { name: 'History' }));
    const items = await within(screen.getByRole('complementary', { name: 'Chat History' })).findAllByRole('listitem');
    fireEvent.click(within(items[0]).getByRole('button', { name: /My printer says offline/ }));
    await waitFor(() => expect(bubbles()).toHaveLength(3));

    stored = {
      chat: {
        ...STORED_C1.chat,
        messages: [
          ...STORED_C1.chat.messages,
          { id: 'u2', role: 'user', content: 'Asked on my phone', timestamp: '2029-03-04T12:01:00Z' },
          { id: 'a2', role: 'assistant', content: 'Answered everywhere', timestamp: '2029-03-04T12:02:00Z' },
        ],
      },
    };
    server('chat:typing', { chatId: 'c1', messageId: 'a2' });
    server('chat:done', { chatId: 'c1', messageId: 'a2', text: 'Answered everywhere', title: 'My printer says offline' });
    await waitFor(() => expect(bubbles()).toHaveLength(5));
    expect(bubbles().slice(3)).toEqual(['Asked on my phone', 'Answered everywhere']);
  });

  it('after a reconnect, takes a finished reply it missed from the store', async () => {
    let stored: unknown = { chat: { ...STORED_C1.chat, messages: STORED_C1.chat.messages.slice(0, 2) } };
    await openConnected({ 'GET /api/chats/c1': () => ({ body: stored }) });
    await ask('My printer says offline');
    server('chat:typing', { chatId: 'c1', messageId: 'a' });
    act(() => socket().serverDrop());

    stored = STORED_C1;
    act(() => socket().serverConnect({ recovered: false }));
    server('chat:ready', { greeting: GREETING, writing: [] });
    await waitFor(() => expect(bubbles()).toEqual([GREETING, 'My printer says offline', 'Turn the printer off and on again.']));
    expect(sendButton().textContent).toBe('Send Message');
    expect(screen.queryByTestId('chat-typing')).toBeNull();
  });

  it('after a reconnect, stops waiting for a reply that was never stored, and lets the member ask again', async () => {
    // The store has the question only: the reply failed (or was lost) while the page was away.
    const questionOnly = { chat: { ...STORED_C1.chat, messages: STORED_C1.chat.messages.slice(0, 2) } };
    const fetchMock = await openConnected({ 'GET /api/chats/c1': { body: questionOnly } });
    await ask('My printer says offline');
    server('chat:typing', { chatId: 'c1', messageId: 'a' });
    server('chat:delta', { chatId: 'c1', messageId: 'a', text: 'Turn the' });
    act(() => socket().serverDrop());
    act(() => socket().serverConnect({ recovered: false }));
    // An older server sends no `writing`: nothing is being written.
    server('chat:ready', { greeting: GREETING });

    await waitFor(() => expect(bubbles()).toEqual([GREETING, 'My printer says offline']));
    expect(fetchMock.mock.calls.filter(([url]) => url === '/api/chats/c1')).toHaveLength(1);
    expect(screen.queryByTestId('chat-typing')).toBeNull();
    expect(screen.queryByRole('button', { name: 'Stop' })).toBeNull();
    type('Are you still there?');
    expect(sendButton().textContent).toBe('Send Message');
    fireEvent.click(sendButton());
    expect(socket().emitted('chat:send')[1]).toEqual({ chatId: 'c1', text: 'Are you still there?' });
  });

  it('after a reconnect, stops waiting even when the chat cannot be read', async () => {
    await openConnected({ 'GET /api/chats/c1': { status: 500, body: { error: 'internal', message: 'Oops' } } });
    await ask('My printer says offline');
    server('chat:typing', { chatId: 'c1', messageId: 'a' });
    act(() => socket().serverDrop());
    act(() => socket().serverConnect({ recovered: false }));
    server('chat:ready', { greeting: GREETING, writing: [] });

    await waitFor(() => expect(screen.queryByTestId('chat-typing')).toBeNull());
    expect(bubbles()).toEqual([GREETING, 'My printer says offline']);
    type('Hello again');
    expect(sendButton().disabled).toBe(false);
  });

  it('after a reconnect, keeps waiting for a reply the server is still writing', async () => {
    const fetchMock = await openConnected();
    await ask('My printer says offline');
    server('chat:typing', { chatId: 'c1', messageId: 'a' });
    act(() => socket().serverDrop());
    act(() => socket().serverConnect({ recovered: false }));
    server('chat:ready', { greeting: GREETING, writing: ['c9', 'c1'] });

    await act(async () => {});
    expect(fetchMock.mock.calls.filter(([url]) => url === '/api/chats/c1')).toEqual([]);
    expect(screen.getByTestId('chat-typing')).toBeTruthy();
    expect(sendButton().textContent).toBe('Sending...');
    expect(screen.getByRole('button', { name: 'Stop' })).toBeTruthy();

    server('chat:delta', { chatId: 'c1', messageId: 'a', text: 'Turn it off' });
    server('chat:done', { chatId: 'c1', messageId: 'a', text: 'Turn it off and on.', title: 'Printer', stopped: false });
    expect(bubbles()).toEqual([GREETING, 'My printer says offline', 'Turn it off and on.']);
    expect(sendButton().textContent).toBe('Send Message');
  });

  it('after a reconnect, shows a reply being written in the open chat that it did not know of', async () => {
    await openConnected({ 'GET /api/chats/c1': { body: STORED_C1 } });
    await ask('My printer says offline');
    server('chat:done', { chatId: 'c1', messageId: 'a', text: 'Turn it off and on.', title: 'Printer' });
    // The follow-up's ack is lost with the connection, though the server stored the message.
    type('It did not help');
    fireEvent.click(sendButton());
    await answer('chat:send', { ok: false, code: 'unavailable', error: 'Your message could not be saved just now.' });
    act(() => socket().serverDrop());
    act(() => socket().serverConnect({ recovered: false }));
    server('chat:ready', { greeting: GREETING, writing: ['c1'] });

    expect(screen.getByTestId('chat-typing')).toBeTruthy();
    expect(sendButton().disabled).toBe(true);
    expect(screen.getByRole('button', { name: 'Stop' })).toBeTruthy();
  });

  it('shows a chat opened from History while its reply is being written as waiting for it', async () => {
    const questionOnly = { chat: { ...STORED_C1.chat, messages: STORED_C1.chat.messages.slice(0, 2) } };
    const STORED_C2 = {
      chat: {
        id: 'c2',
        title: 'How do I attach a photo to an email?',
        messages: [{ id: 'q2', role: 'user', content: 'How do I attach a photo to an email?' }],
      },
    };
    await openConnected({
      'GET /api/chats': { body: CHATS },
      'GET /api/chats/c1': { body: questionOnly },
      'GET /api/chats/c2': { body: STORED_C2 },
    });
    // c1 was being written when this page joined; c2's reply starts later (asked on the phone).
    server('chat:ready', { greeting: GREETING, writing: ['c1'] });
    server('chat:typing', { chatId: 'c2', messageId: 'a2' });

    const openFromHistory = async (name: RegExp) => {
      fireEvent.click(screen.getByRole('button', { name: 'History' }));
      const history = screen.getByRole('complementary', { name: 'Chat History' });
      const items = await within(history).findAllByRole('listitem');
      const item = items.find((entry) => name.test(entry.textContent ?? ''))!;
      fireEvent.click(within(item).getByRole('button', { name }));
      await waitFor(() => expect(screen.queryByRole('complementary', { name: 'Chat History' })).toBeNull());
    };

    await openFromHistory(/My printer says offline/);
    expect(bubbles()).toEqual([GREETING, 'My printer says offline']);
    expect(screen.getByTestId('chat-typing')).toBeTruthy();
    type('Hello?');
    expect(sendButton().textContent).toBe('Sending...');
    expect(sendButton().disabled).toBe(true);
    fireEvent.click(screen.getByRole('button', { name: 'Stop' }));
    expect(socket().emitted('chat:stop')).toEqual([{ chatId: 'c1' }]);

    await openFromHistory(/How do I attach a photo/);
    expect(screen.getByTestId('chat-typing')).toBeTruthy();
    expect(sendButton().disabled).toBe(true);

    // c1's reply ends while another chat is open: opened again, it is not waiting any more.
    server('chat:done', { chatId: 'c1', messageId: 'a', text: 'Stopped here', title: 'Printer', stopped: true });
    server('chat:error', { chatId: 'c2', text: 'I apologize, but I encountered an error. Please try again.' });
    expect(screen.queryByTestId('chat-typing')).toBeNull();
    expect(sendButton().disabled).toBe(false);

    await openFromHistory(/My printer says offline/);
    expect(screen.queryByTestId('chat-typing')).toBeNull();
    expect(sendButton().textContent).toBe('Send Message');
    expect(sendButton().disabled).toBe(false);
  });

  it('holds a message while the connection comes back, then sends it once', async () => {
    await openConnected();
    act(() => socket().serverDrop());
    type('Are you there?');
    fireEvent.click(sendButton());
    expect(socket().emitted('chat:send')).toEqual([]);
    act(() => socket().serverConnect());
    await waitFor(() => expect(socket().emitted('chat:send')).toEqual([{ text: 'Are you there?' }]));
  });

  it('does not send when the connection is gone for good', async () => {
    await openConnected();
    act(() => {
      socket().serverDrop();
      socket().active = false;
    });
    type('Are you there?');
    fireEvent.click(sendButton());
    expect(socket().emitted('chat:send')).toEqual([]);
    await waitFor(() =>
      expect(within(input().closest('form')!).getByRole('alert').textContent).toBe(
        'The chat is not connected just now. Please try again in a moment.',
      ),
    );
    await waitFor(() => expect(input().value).toBe('Are you there?'));
  });
});

describe('the shortcuts row', () => {
  it("shows a visitor the sites picked on this device", async () => {
    window.localStorage.setItem('selectedIcons', JSON.stringify(['Zoom']));
    await openPage(null);
    await screen.findByRole('form', { name: 'Sign in' });
    expect(screen.getByRole('heading', { name: 'Your favorite sites' })).toBeTruthy();
    const links = await screen.findByRole('list', { name: 'Your shortcuts' });
    expect(within(links).getAllByRole('link').map((link) => link.textContent)).toEqual(['Zoom']);
    expect(screen.getByRole('button', { name: 'Select Additional Shortcuts' })).toBeTruthy();
  });

  it("gives a member whose account has no shortcuts this device's picks, saved to the account", async () => {
    window.localStorage.setItem('selectedIcons', JSON.stringify(['YouTube', 'Gmail']));
    const fetchMock = await openConnected(
      { 'PUT /api/account/shortcuts': { body: { shortcuts: ['YouTube', 'Gmail'] } } },
      member({ id: 'u-device-picks', shortcuts: [] }),
    );
    const links = await screen.findByRole('list', { name: 'Your shortcuts' });
    expect(within(links).getAllByRole('link').map((link) => link.textContent)).toEqual(['YouTube', 'Gmail']);
    await waitFor(() =>
      expect(
        fetchMock.mock.calls
          .filter(([url, init]) => url === '/api/account/shortcuts' && init?.method === 'PUT')
          .map(([, init]) => JSON.parse(String(init?.body))),
      ).toEqual([{ shortcuts: ['YouTube', 'Gmail'] }]),
    );
  });

  it("shows a member's saved shortcuts and counts their use", async () => {
    const fetchMock = await openConnected({}, member({ shortcuts: ['Gmail', 'Zoom'] }));
    const links = await screen.findByRole('list', { name: 'Your shortcuts' });
    expect(within(links).getAllByRole('link').map((link) => link.textContent)).toEqual(['Gmail', 'Zoom']);
    expect(screen.getByRole('button', { name: 'Select Additional Shortcuts' })).toBeTruthy();

    // jsdom cannot open a new tab; the page's own reaction is what counts.
    document.addEventListener('click', (event) => event.preventDefault(), { once: true });
    fireEvent.click(within(links).getAllByRole('link')[0]);
    await waitFor(() =>
      expect(events(fetchMock).filter((event) => event.name === 'feature_use')).toEqual([
        { name: 'feature_use', path: '/', properties: { feature: 'shortcuts' } },
      ]),
    );
  });
});

describe('the sidebars', () => {
  it('opens one at a time, and records each opening', async () => {
    const fetchMock = await openConnected();
    fireEvent.click(screen.getByRole('button', { name: 'Task List' }));
    const tasks = screen.getByRole('complementary', { name: 'Task List' });
    expect(await within(tasks).findByRole('heading', { name: 'Your Tasks' })).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Task List' }).getAttribute('aria-expanded')).toBe('true');

    fireEvent.click(screen.getByRole('button', { name: 'History' }));
    expect(screen.queryByRole('complementary', { name: 'Task List' })).toBeNull();
    expect(screen.getByRole('complementary', { name: 'Chat History' })).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Task List' }).getAttribute('aria-expanded')).toBe('false');

    fireEvent.click(screen.getByRole('button', { name: 'History' }));
    expect(screen.queryByRole('complementary')).toBeNull();

    await waitFor(() =>
      expect(events(fetchMock).filter((event) => event.name === 'sidebar_opened')).toEqual([
        { name: 'sidebar_opened', path: '/', properties: { sidebar: 'tasks' } },
        { name: 'sidebar_opened', path: '/', properties: { sidebar: 'history' } },
      ]),
    );
  });

  it('closes with its close button and with Escape', async () => {
    await openConnected();
    fireEvent.click(screen.getByRole('button', { name: 'History' }));
    fireEvent.click(screen.getByRole('button', { name: 'Close Chat History' }));
    expect(screen.queryByRole('complementary')).toBeNull();

    fireEvent.click(screen.getByRole('button', { name: 'Task List' }));
    fireEvent.keyDown(screen.getByRole('complementary', { name: 'Task List' }), { key: 'Escape' });
    expect(screen.queryByRole('complementary')).toBeNull();
  });
});

/** Plays the screen's width for `matchMedia('(max-width: 760px)')`; `set` turns or resizes it. */
function screenWidth(narrow: boolean) {
  let matches = narrow;
  const listeners = new Set<() => void>();
  vi.stubGlobal('matchMedia', (query: string) => ({
    media: query,
    get matches() {
      return query === '(max-width: 760px)' && matches;
    },
    addEventListener: (_event: string, listener: () => void) => listeners.add(listener),
    removeEventListener: (_event: string, listener: () => void) => listeners.delete(listener),
  }));
  return {
    set(next: boolean) {
      matches = next;
      act(() => listeners.forEach((listener) => listener()));
    },
  };
}

function inertElements() {
  return Array.from(document.querySelectorAll('[inert]'));
}

describe('the sidebars on a phone', () => {
  it('are modal dialogs over an inert page; Escape closes them and focus goes back to the toggle', async () => {
    screenWidth(true);
    await openConnected({ 'GET /api/chats': { body: CHATS } });
    const toggle = screen.getByRole('button', { name: 'History' });
    toggle.focus();
    fireEvent.click(toggle);

    const history = screen.getByRole('dialog', { name: 'Chat History' });
    expect(history.getAttribute('aria-modal')).toBe('true');
    expect(screen.queryByRole('complementary')).toBeNull();
    expect(document.activeElement).toBe(history);
    // The chat, the rest of the page and the site's header cannot be reached behind it.
    expect(conversation().closest('[inert]')).not.toBeNull();
    expect(input().closest('[inert]')).not.toBeNull();
    expect(screen.getByRole('heading', { level: 1, name: 'Welcome to HelpNow' }).closest('[inert]')).not.toBeNull();
    expect(document.querySelector('header')?.closest('[inert]')).not.toBeNull();
    expect(history.closest('[inert]')).toBeNull();

    // A dialog it opens is not behind it.
    const items = await within(history).findAllByRole('listitem');
    fireEvent.click(within(items[0]).getByRole('button', { name: 'Delete' }));
    const confirm = screen.getByRole('dialog', { name: 'Are you sure you want to delete this conversation?' });
    expect(confirm.closest('[inert]')).toBeNull();
    fireEvent.click(within(confirm).getByRole('button', { name: 'Cancel' }));

    fireEvent.keyDown(history, { key: 'Escape' });
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(inertElements()).toEqual([]);
    expect(document.activeElement).toBe(screen.getByRole('button', { name: 'History' }));
  });

  it('gives focus back to the toggle after the close button, even when a tap did not focus it', async () => {
    screenWidth(true);
    await openConnected();
    fireEvent.click(screen.getByRole('button', { name: 'Task List' }));
    const tasks = screen.getByRole('dialog', { name: 'Task List' });
    expect(inertElements().length).toBeGreaterThan(0);
    fireEvent.click(within(tasks).getByRole('button', { name: 'Close Task List' }));
    expect(inertElements()).toEqual([]);
    expect(document.activeElement).toBe(screen.getByRole('button', { name: 'Task List' }));

    // Tabbing past its end leaves focus on the (inert) page's body: Escape still closes it.
    fireEvent.click(screen.getByRole('button', { name: 'Task List' }));
    act(() => (document.activeElement as HTMLElement).blur());
    fireEvent.keyDown(document.body, { key: 'Escape' });
    expect(screen.queryByRole('dialog', { name: 'Task List' })).toBeNull();
    expect(document.activeElement).toBe(screen.getByRole('button', { name: 'Task List' }));
  });

  it('turn from a landmark beside the chat into a dialog and back as the screen narrows and widens', async () => {
    const width = screenWidth(false);
    await openConnected();
    fireEvent.click(screen.getByRole('button', { name: 'Task List' }));
    expect(screen.getByRole('complementary', { name: 'Task List' })).toBeTruthy();
    expect(inertElements()).toEqual([]);

    width.set(true);
    expect(screen.getByRole('dialog', { name: 'Task List' })).toBeTruthy();
    expect(conversation().closest('[inert]')).not.toBeNull();

    width.set(false);
    expect(screen.getByRole('complementary', { name: 'Task List' })).toBeTruthy();
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(inertElements()).toEqual([]);
  });
});

describe('the chat history', () => {
  it('lists titles, previews and dates, and opens a chat in place of the current one', async () => {
    const fetchMock = await openConnected({ 'GET /api/chats': { body: CHATS }, 'GET /api/chats/c1': { body: STORED_C1 } });
    fireEvent.click(screen.getByRole('button', { name: 'History' }));
    const history = screen.getByRole('complementary', { name: 'Chat History' });
    expect(within(history).getByRole('heading', { name: 'Chat History' })).toBeTruthy();
    expect(within(history).getByRole('heading', { name: 'Your Conversations' })).toBeTruthy();

    const items = await within(history).findAllByRole('listitem');
    expect(items.map((item) => item.querySelector('.chat-history__chat-title')?.textContent)).toEqual([
      'My printer says offline',
      'How do I attach a photo to a...',
    ]);
    expect(items[0].textContent).toContain('Turn the printer off and on again.');
    expect(items[0].querySelector('time')?.textContent).toBe('Mar 4, 2029');
    expect(items[1].querySelector('time')?.textContent).toBe('Feb 1, 2029');

    fireEvent.click(within(items[0]).getByRole('button', { name: /My printer says offline/ }));
    await waitFor(() => expect(screen.queryByRole('complementary', { name: 'Chat History' })).toBeNull());
    expect(bubbles()).toEqual([GREETING, 'My printer says offline', 'Turn the printer off and on again.']);
    expect(fetchMock.mock.calls.map(([url]) => url)).toContain('/api/chats/c1');

    // The next question goes to the opened chat.
    await act(async () => {
      type('Still offline');
      fireEvent.click(sendButton());
    });
    expect(socket().emitted('chat:send')).toEqual([{ chatId: 'c1', text: 'Still offline' }]);
  });

  it('says when there is no history yet, and starts a new conversation', async () => {
    await openConnected();
    await ask('Something');
    server('chat:done', { chatId: 'c1', messageId: 'm2', text: 'Answer', title: 'Something' });

    fireEvent.click(screen.getByRole('button', { name: 'History' }));
    const history = screen.getByRole('complementary', { name: 'Chat History' });
    expect(await within(history).findByText('No conversation history yet')).toBeTruthy();
    expect(within(history).getByText('Start a new conversation!')).toBeTruthy();

    fireEvent.click(within(history).getByRole('button', { name: '+ New Conversation' }));
    expect(bubbles()).toEqual([GREETING]);
  });

  it('reloads the list when a reply is done', async () => {
    const fetchMock = await openConnected();
    fireEvent.click(screen.getByRole('button', { name: 'History' }));
    await screen.findByText('No conversation history yet');
    const listCalls = () => fetchMock.mock.calls.filter(([url]) => url === '/api/chats').length;
    const before = listCalls();
    await ask('A question');
    server('chat:done', { chatId: 'c1', messageId: 'm2', text: 'Answer', title: 'A question' });
    await waitFor(() => expect(listCalls()).toBe(before + 1));
  });

  it('deletes a chat after confirmation, and starts anew when it was the open one', async () => {
    let deleted = false;
    const fetchMock = await openConnected({
      'GET /api/chats': () => ({ body: deleted ? { chats: CHATS.chats.slice(1) } : CHATS }),
      'GET /api/chats/c1': { body: STORED_C1 },
      'DELETE /api/chats/c1': () => {
        deleted = true;
        // (The fetch mock cannot build a 204 with a body; the client reads both alike.)
        return { status: 200, body: null };
      },
    });
    fireEvent.click(screen.getByRole('button', { name: 'History' }));
    let items = await within(screen.getByRole('complementary', { name: 'Chat History' })).findAllByRole('listitem');
    fireEvent.click(within(items[0]).getByRole('button', { name: /My printer says offline/ }));
    await waitFor(() => expect(bubbles()).toHaveLength(3));

    fireEvent.click(screen.getByRole('button', { name: 'History' }));
    items = await within(screen.getByRole('complementary', { name: 'Chat History' })).findAllByRole('listitem');

    // Cancel keeps it.
    fireEvent.click(within(items[0]).getByRole('button', { name: 'Delete' }));
    let dialog = screen.getByRole('dialog', { name: 'Are you sure you want to delete this conversation?' });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(fetchMock.mock.calls.some(([, init]) => init?.method === 'DELETE')).toBe(false);

    fireEvent.click(within(items[0]).getByRole('button', { name: 'Delete' }));
    dialog = screen.getByRole('dialog', { name: 'Are you sure you want to delete this conversation?' });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Delete' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());

    const history = screen.getByRole('complementary', { name: 'Chat History' });
    expect(within(history).getAllByRole('listitem')).toHaveLength(1);
    expect(within(history).queryByText('My printer says offline')).toBeNull();
    expect(bubbles()).toEqual([GREETING]);
  });
});

describe('task help', () => {
  const TASKS = {
    tasks: [
      {
        id: 't1',
        name: 'Set up my new phone',
        timestamp: '2029-01-01T00:00:00Z',
        items: [{ id: 'i1', text: 'Copy my contacts', completed: false }],
      },
    ],
  };

  it('reviews the task, then shows the reply in the new chat', async () => {
    const fetchMock = await openConnected({ 'GET /api/tasks': { body: TASKS } });
    fireEvent.click(screen.getByRole('button', { name: 'Task List' }));
    fireEvent.click(await screen.findByRole('button', { name: 'Get AI assistance with Set up my new phone' }));

    expect(socket().emitted('task:help')).toEqual([{ taskId: 't1' }]);
    expect(within(conversation()).getByText('Reviewing task, just a moment...')).toBeTruthy();
    expect(bubbles()).toEqual([]);

    await answer('task:help', { ok: true, chatId: 'c5', title: 'Help with: Set up my new phone' });
    server('chat:typing', { chatId: 'c5', messageId: 'm9' });
    expect(within(conversation()).getByText('Reviewing task, just a moment...')).toBeTruthy();
    server('chat:delta', { chatId: 'c5', messageId: 'm9', text: '1. Sign in to your account' });
    expect(within(conversation()).queryByText('Reviewing task, just a moment...')).toBeNull();
    server('chat:done', {
      chatId: 'c5',
      messageId: 'm9',
      text: '1. Sign in to your account\n2. Copy contacts',
      title: 'Help with: Set up my new phone',
    });
    expect(within(conversation()).getAllByRole('listitem').map((item) => item.textContent)).toEqual([
      'Sign in to your account',
      'Copy contacts',
    ]);

    await act(async () => {
      type('Thanks, and then?');
      fireEvent.click(sendButton());
    });
    expect(socket().emitted('chat:send')).toEqual([{ chatId: 'c5', text: 'Thanks, and then?' }]);
    await waitFor(() =>
      expect(events(fetchMock)).toContainEqual({ name: 'feature_use', path: '/', properties: { feature: 'task_help' } }),
    );
  });

  it("shows the task help error, and the server's refusal restores the chat", async () => {
    await openConnected({ 'GET /api/tasks': { body: TASKS } });
    fireEvent.click(screen.getByRole('button', { name: 'Task List' }));
    const help = await screen.findByRole('button', { name: 'Get AI assistance with Set up my new phone' });

    fireEvent.click(help);
    await answer('task:help', { ok: false, code: 'not_found', error: 'Task not found.' });
    expect(bubbles()).toEqual([GREETING]);
    expect(within(input().closest('form')!).getByRole('alert').textContent).toBe('Task not found.');

    fireEvent.click(help);
    await answer('task:help', { ok: true, chatId: 'c6', title: 'Help' });
    const taskError = 'I apologize, but I encountered an error while analyzing your task. Please try again.';
    server('chat:error', { chatId: 'c6', text: taskError });
    expect(bubbles()).toEqual([taskError]);
  });
});
