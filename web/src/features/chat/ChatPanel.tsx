import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { Button } from '../../components/Button';
import { enterToSend } from '../../lib/enter-to-send';
import { usePublicConfig } from '../../lib/public-config';
import { AssistantText } from './AssistantText';
import { isReviewingTask, showsTyping, type ChatMessage, type ChatState } from './chat-state';
import type { Connection } from './useMemberChat';
import './chat.css';

export const REVIEWING_TASK_TEXT = 'Reviewing task, just a moment...';
/** Room kept above a new answer's first line when the list scrolls to it. */
const ANSWER_MARGIN_PX = 8;
export const RECONNECTING_LINE = 'Connection lost. Reconnecting…';
/** Shown once above the conversation when no AI service answers (the server's `aiMode`). */
export const LIBRARY_NOTE = 'Answers come from our help library while our live assistant is offline.';

export type SidebarKind = 'tasks' | 'history';

type ChatPanelProps = {
  productName: string;
  assistantName: string;
  state: ChatState;
  busy: boolean;
  connection: Connection;
  connectionError: string | null;
  /** Why the last request did not go through. */
  notice: string | null;
  /** Resolves true once the message is taken; otherwise the text goes back into the field. */
  onSend: (text: string) => Promise<boolean>;
  onStop: () => void;
  onNewChat: () => void;
  onReconnect: () => void;
  sidebar: SidebarKind | null;
  onToggleSidebar: (kind: SidebarKind) => void;
  /** The ids of the sidebars, for aria-controls. */
  sidebarIds: Record<SidebarKind, string>;
};

function MessageBubble({ message, assistantName }: { message: ChatMessage; assistantName: string }) {
  const assistant = message.role === 'assistant';
  const classes = [
    'member-chat__message',
    `member-chat__message--${message.role}`,
    message.status === 'error' ? 'member-chat__message--error' : '',
  ]
    .filter(Boolean)
    .join(' ');
  return (
    <div className={classes} data-testid={`chat-message-${message.role}`}>
      {assistant && (
        <span className="member-chat__avatar" aria-hidden="true">
          {assistantName.charAt(0)}
        </span>
      )}
      <div className="member-chat__bubble">
        <span className="member-chat__sr-only">{assistant ? `${assistantName}:` : 'You:'}</span>
        {assistant && message.status !== 'error' ? (
          <AssistantText text={message.text} />
        ) : (
          <p className="member-chat__plain">{message.text}</p>
        )}
      </div>
    </div>
  );
}

function TypingDots({ assistantName }: { assistantName: string }) {
  return (
    <div className="member-chat__typing" role="status" data-testid="chat-typing">
      <span className="member-chat__sr-only">{assistantName} is typing</span>
      <span className="member-chat__dots" aria-hidden="true">
        <span />
        <span />
        <span />
      </span>
    </div>
  );
}

function Composer({
  busy,
  canStop,
  notice,
  onSend,
  onStop,
}: {
  busy: boolean;
  canStop: boolean;
  notice: string | null;
  onSend: (text: string) => Promise<boolean>;
  onStop: () => void;
}) {
  const [text, setText] = useState('');
  const noticeId = useId();
  const inputRef = useRef<HTMLTextAreaElement>(null);

  async function submit() {
    const submitted = text;
    if (submitted.trim() === '' || busy) return;
    // The field empties at once (it reads 'Please wait...' while the reply comes); a message the
    // server did not take comes back, unless something new was typed meanwhile.
    setText('');
    const taken = await onSend(submitted);
    if (!taken) setText((current) => (current === '' ? submitted : current));
  }

  const onKeyDown = enterToSend(() => void submit());

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    void submit();
  }

  return (
    <form className="member-chat__composer" onSubmit={onSubmit}>
      {notice && (
        <p id={noticeId} className="member-chat__notice" role="alert">
          {notice}
        </p>
      )}
      <div className="member-chat__composer-row">
        <textarea
          ref={inputRef}
          className="member-chat__input"
          aria-label="Your question"
          aria-describedby={notice ? noticeId : undefined}
          placeholder={busy ? 'Please wait...' : 'Type your question...'}
          rows={3}
          value={text}
          onChange={(event) => setText(event.target.value.replace(/^\s+/, ''))}
          onKeyDown={onKeyDown}
        />
        <div className="member-chat__composer-actions">
          <Button type="submit" className="member-chat__send" disabled={busy || text.trim() === ''} aria-busy={busy}>
            {busy ? 'Sending...' : 'Send Message'}
          </Button>
          {canStop && (
            <Button
              variant="secondary"
              className="member-chat__stop"
              onClick={() => {
                onStop();
                // The button goes once the reply ends; the question field is where the member goes on.
                inputRef.current?.focus();
              }}
            >
              Stop
            </Button>
          )}
        </div>
      </div>
    </form>
  );
}

/** The members page's chat: heading, New Chat / History / Task List, the messages and the input. */
export function ChatPanel({
  productName,
  assistantName,
  state,
  busy,
  connection,
  connectionError,
  notice,
  onSend,
  onStop,
  onNewChat,
  onReconnect,
  sidebar,
  onToggleSidebar,
  sidebarIds,
}: ChatPanelProps) {
  const headingId = useId();
  const { aiMode } = usePublicConfig();
  const listRef = useRef<HTMLDivElement>(null);
  const reviewing = isReviewingTask(state);
  const typing = showsTyping(state);
  const lastText = state.messages[state.messages.length - 1]?.text ?? '';

  const lastRole = state.messages[state.messages.length - 1]?.role;

  // Keep the newest message in view, as a chat does; but a new answer is read from its start: the
  // list follows it only while its first line stays in view (step 1 before 'If that didn't work').
  useEffect(() => {
    const list = listRef.current;
    if (!list) return;
    const bottom = list.scrollHeight - list.clientHeight;
    const answer = lastRole === 'assistant' && !typing ? list.querySelector('.member-chat__log > :last-child') : null;
    if (answer instanceof HTMLElement) {
      const answerTop =
        list.scrollTop + answer.getBoundingClientRect().top - list.getBoundingClientRect().top - ANSWER_MARGIN_PX;
      list.scrollTop = Math.max(0, Math.min(bottom, answerTop));
    } else {
      list.scrollTop = bottom;
    }
  }, [state.messages.length, lastText, lastRole, typing, reviewing]);

  return (
    <section className="card member-chat" aria-labelledby={headingId}>
      <div className="member-chat__header">
        <h2 id={headingId} className="member-chat__title">
          {productName} AI assist, ask anything!
        </h2>
        <div className="member-chat__tools">
          <Button
            variant="secondary"
            className="member-chat__tool"
            aria-expanded={sidebar === 'tasks'}
            aria-controls={sidebar === 'tasks' ? sidebarIds.tasks : undefined}
            onClick={() => onToggleSidebar('tasks')}
          >
            Task List
          </Button>
          <Button
            variant="secondary"
            className="member-chat__tool"
            aria-expanded={sidebar === 'history'}
            aria-controls={sidebar === 'history' ? sidebarIds.history : undefined}
            onClick={() => onToggleSidebar('history')}
          >
            History
          </Button>
          <Button variant="secondary" className="member-chat__tool" onClick={onNewChat}>
            New Chat
          </Button>
        </div>
      </div>
      {aiMode === 'offline' && (
        <p className="member-chat__library-note" data-testid="chat-library-note">
          {LIBRARY_NOTE}
        </p>
      )}
      {state.title && <p className="member-chat__chat-title">{state.title}</p>}

      {connection === 'reconnecting' && (
        <p className="member-chat__connection" role="status">
          {RECONNECTING_LINE}
        </p>
      )}
      {connection === 'closed' && connectionError && (
        <div className="member-chat__connection member-chat__connection--closed" role="alert">
          <span>{connectionError}</span>
          <Button variant="link" onClick={onReconnect}>
            Try again
          </Button>
        </div>
      )}

      <div ref={listRef} className="member-chat__messages">
        {/* Busy while a reply streams, so screen readers read it once, whole, not piece by piece. */}
        <div
          className={reviewing ? 'member-chat__log member-chat__log--fill' : 'member-chat__log'}
          role="log"
          aria-label="Conversation"
          aria-live="polite"
          aria-busy={state.reply?.phase === 'streaming'}
        >
          {reviewing ? (
            <div className="member-chat__reviewing" role="status">
              <span className="spinner" aria-hidden="true" /> {REVIEWING_TASK_TEXT}
            </div>
          ) : (
            state.messages.map((message) => (
              <MessageBubble key={message.id} message={message} assistantName={assistantName} />
            ))
          )}
        </div>
        {/* Its own status, outside the log, so it is announced once. */}
        {typing && <TypingDots assistantName={assistantName} />}
      </div>

      <Composer
        busy={busy}
        canStop={state.reply !== null && state.reply.phase !== 'waiting' && state.chatId !== null}
        notice={notice}
        onSend={onSend}
        onStop={onStop}
      />
    </section>
  );
}
