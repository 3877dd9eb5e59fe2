import {
  chatReducer,
  DEFAULT_GREETING,
  initialChatState,
  isBusy,
  isReviewingTask,
  serverEvent,
  showsTyping,
  TASK_HELP_FALLBACK,
  type ChatAction,
  type ChatState,
} from './chat-state';

function run(actions: ChatAction[], state: ChatState = initialChatState()): ChatState {
  return actions.reduce(chatReducer, state);
}

function server(name: 'typing' | 'delta' | 'done' | 'error', payload: Record<string, unknown>): ChatAction {
  const event = serverEvent(name, payload);
  if (!event) throw new Error('no chat id');
  return { type: 'server', payload: event };
}

function texts(state: ChatState) {
  return state.messages.map((message) => [message.role, message.text]);
}

const asked: ChatAction[] = [
  { type: 'sending', request: 'r1', text: 'My printer is offline' },
  { type: 'sent', request: 'r1', chatId: 'c1', title: 'My printer is offline' },
];

describe('the members chat state', () => {
  it('starts with the greeting, which the server may replace until the chat is used', () => {
    expect(texts(initialChatState())).toEqual([['assistant', DEFAULT_GREETING]]);
    const greeted = run([{ type: 'ready', greeting: 'Hi Ann, still stuck with Yahoo Mail?' }]);
    expect(texts(greeted)).toEqual([['assistant', 'Hi Ann, still stuck with Yahoo Mail?']]);

    const used = run([...asked, { type: 'ready', greeting: 'Another greeting' }]);
    expect(texts(used)[0]).toEqual(['assistant', DEFAULT_GREETING]);
    expect(texts(run([{ type: 'new-chat' }], used))).toEqual([['assistant', 'Another greeting']]);
  });

  it('appends the pieces of a reply and replaces them with the whole text when done', () => {
    let state = run([...asked, server('typing', { chatId: 'c1', messageId: 'm2' })]);
    expect(showsTyping(state)).toBe(true);
    state = run(
      [
        server('delta', { chatId: 'c1', messageId: 'm2', text: 'Turn it ' }),
        server('delta', { chatId: 'c1', messageId: 'm2', text: 'off and' }),
      ],
      state,
    );
    expect(texts(state)[2]).toEqual(['assistant', 'Turn it off and']);
    expect(showsTyping(state)).toBe(false);
    expect(isBusy(state)).toBe(true);

    // A missed (volatile) piece does not matter: done carries the whole reply.
    state = run(
      [server('done', { chatId: 'c1', messageId: 'm2', text: 'Turn it off and on again.', title: 'Printer' })],
      state,
    );
    expect(texts(state)).toEqual([
      ['assistant', DEFAULT_GREETING],
      ['user', 'My printer is offline'],
      ['assistant', 'Turn it off and on again.'],
    ]);
    expect(state.title).toBe('Printer');
    expect(isBusy(state)).toBe(false);
    expect(state.stale).toBe(false);
  });

  it('keeps the events of a new chat that come before its ack, and ignores other chats', () => {
    let state = run([
      { type: 'sending', request: 'r1', text: 'Hello' },
      server('typing', { chatId: 'c9', messageId: 'm2' }),
      server('delta', { chatId: 'c9', messageId: 'm2', text: 'Hi!' }),
    ]);
    expect(texts(state)).toHaveLength(2);
    state = run([{ type: 'sent', request: 'r1', chatId: 'c9', title: 'Hello' }], state);
    expect(texts(state)[2]).toEqual(['assistant', 'Hi!']);

    state = run([server('delta', { chatId: 'other', messageId: 'x', text: 'not mine' })], state);
    expect(texts(state)).toHaveLength(3);
  });

  it('takes back a refused message and ignores a stale ack after New Chat', () => {
    const refused = run([{ type: 'sending', request: 'r1', text: 'Hello' }, { type: 'refused', request: 'r1' }]);
    expect(texts(refused)).toEqual([['assistant', DEFAULT_GREETING]]);
    expect(isBusy(refused)).toBe(false);

    const reset = run([
      { type: 'sending', request: 'r1', text: 'Hello' },
      { type: 'new-chat' },
      { type: 'sent', request: 'r1', chatId: 'c1', title: 'x' },
    ]);
    expect(reset.chatId).toBeNull();
    expect(texts(reset)).toEqual([['assistant', DEFAULT_GREETING]]);
  });

  it('shows the error text as the assistant message', () => {
    const state = run([
      ...asked,
      server('delta', { chatId: 'c1', messageId: 'm2', text: 'Half' }),
      server('error', { chatId: 'c1', text: 'I apologize, but I encountered an error. Please try again.' }),
    ]);
    expect(texts(state)[2]).toEqual(['assistant', 'I apologize, but I encountered an error. Please try again.']);
    expect(state.messages[2].status).toBe('error');
    expect(isBusy(state)).toBe(false);
  });

  it('drops a reply stopped before its first word', () => {
    const state = run([
      ...asked,
      server('typing', { chatId: 'c1' }),
      server('done', { chatId: 'c1', messageId: 'm2', text: '', stopped: true }),
    ]);
    expect(texts(state)).toHaveLength(2);
    expect(isBusy(state)).toBe(false);
  });

  it('reviews a task, then shows its reply, with the fallback for an empty one', () => {
    let state = run([...asked, { type: 'task-help', request: 't1' }]);
    expect(isReviewingTask(state)).toBe(true);
    expect(showsTyping(state)).toBe(false);
    state = run(
      [{ type: 'task-help-taken', request: 't1', chatId: 'c2', title: 'Help with: Taxes' }, server('typing', { chatId: 'c2' })],
      state,
    );
    expect(isReviewingTask(state)).toBe(true);
    const reviewing = state;
    state = run([server('done', { chatId: 'c2', messageId: 'm5', text: '  ', stopped: false })], reviewing);
    expect(texts(state)).toEqual([['assistant', TASK_HELP_FALLBACK]]);
    expect(state.chatId).toBe('c2');

    // Stopped before its first word, it leaves nothing, not the fallback.
    state = run([server('done', { chatId: 'c2', messageId: 'm5', text: '', stopped: true })], reviewing);
    expect(texts(state)).toEqual([]);
    expect(isBusy(state)).toBe(false);
    expect(isReviewingTask(state)).toBe(false);
  });

  it('shows a chat opened while its reply is being written as waiting for it', () => {
    const messages = [{ id: 'u', role: 'user' as const, text: 'Q' }];
    const writing = run([{ type: 'loaded', chatId: 'c1', title: 'T', messages, writing: true }]);
    expect(showsTyping(writing)).toBe(true);
    expect(isBusy(writing)).toBe(true);
    const done = run([server('done', { chatId: 'c1', messageId: 'a', text: 'Answer' })], writing);
    expect(texts(done)).toEqual([['user', 'Q'], ['assistant', 'Answer']]);
    expect(isBusy(done)).toBe(false);

    const idle = run([{ type: 'loaded', chatId: 'c1', title: 'T', messages }]);
    expect(isBusy(idle)).toBe(false);
  });

  it('stops waiting when the server no longer writes the reply, with the stored chat or without it', () => {
    const waiting = run([...asked, server('delta', { chatId: 'c1', messageId: 'm2', text: 'Half' })]);
    const stored = [
      { id: 'u', role: 'user' as const, text: 'My printer is offline' },
      { id: 'm2', role: 'assistant' as const, text: 'Half of it, stopped' },
    ];
    const settled = run([{ type: 'settled', chatId: 'c1', title: 'Printer', messages: stored }], waiting);
    expect(texts(settled)).toEqual([['user', 'My printer is offline'], ['assistant', 'Half of it, stopped']]);
    expect(isBusy(settled)).toBe(false);
    expect(settled.title).toBe('Printer');

    const unread = run([{ type: 'settled', chatId: 'c1', title: null, messages: null }], waiting);
    expect(texts(unread)).toEqual(texts(waiting));
    expect(isBusy(unread)).toBe(false);
    // A later reply in the chat gets its own bubble, not the half one.
    const next = run(
      [
        { type: 'sending', request: 'r2', text: 'Again?' },
        { type: 'sent', request: 'r2', chatId: 'c1', title: null },
        server('delta', { chatId: 'c1', messageId: '', text: 'New' }),
      ],
      unread,
    );
    expect(texts(next).slice(-3)).toEqual([['assistant', 'Half'], ['user', 'Again?'], ['assistant', 'New']]);

    // Another chat's news changes nothing here.
    expect(run([{ type: 'settled', chatId: 'c9', title: null, messages: [] }], waiting)).toEqual(waiting);
  });

  it('restores the chat when task help is refused', () => {
    const before = run(asked);
    const state = run([{ type: 'task-help', request: 't1' }, { type: 'task-help-refused', request: 't1' }], before);
    expect(texts(state)).toEqual(texts(before));
    expect(state.chatId).toBe('c1');
  });

  it("marks a reply another tab asked for as stale, so the page reloads the chat's question", () => {
    const loaded = run([
      { type: 'loaded', chatId: 'c1', title: 'T', messages: [{ id: 'g', role: 'assistant', text: 'Hi' }] },
    ]);
    const state = run(
      [server('typing', { chatId: 'c1' }), server('done', { chatId: 'c1', messageId: 'm3', text: 'Answer' })],
      loaded,
    );
    expect(state.stale).toBe(true);
    const refreshed = run(
      [
        {
          type: 'refreshed',
          chatId: 'c1',
          title: 'T',
          messages: [
            { id: 'u', role: 'user', text: 'Q' },
            { id: 'm3', role: 'assistant', text: 'Answer' },
          ],
        },
      ],
      state,
    );
    expect(refreshed.stale).toBe(false);
    expect(texts(refreshed)).toEqual([['user', 'Q'], ['assistant', 'Answer']]);
  });

  it('forgets the open chat when it is deleted', () => {
    expect(run([...asked, { type: 'forget', chatId: 'c1' }]).chatId).toBeNull();
    expect(run([...asked, { type: 'forget', chatId: 'c7' }]).chatId).toBe('c1');
  });
});
