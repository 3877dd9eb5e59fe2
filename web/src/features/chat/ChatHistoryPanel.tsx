import { useEffect, useId, useState } from 'react';
import { Button } from '../../components/Button';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { chatApi, type ChatSummary } from './api';
import { formatChatDate } from './format';
import './chat.css';

export const DELETE_QUESTION = 'Are you sure you want to delete this conversation?';
export const LOAD_FAILED_TEXT = "Sorry, we couldn't load your conversations. Please try again.";
export const DELETE_FAILED_TEXT = "Sorry, we couldn't delete this conversation. Please try again.";

type Load = { status: 'loading' } | { status: 'failed' } | { status: 'loaded'; chats: ChatSummary[] };

type ChatHistoryPanelProps = {
  /** Changes when the list may have changed (a reply finished): the list is fetched again. */
  reloadKey: number;
  /** The chat the page shows, marked in the list. */
  openChatId: string | null;
  onOpen: (chatId: string) => void;
  onNewConversation: () => void;
  /** After the server deleted the chat. */
  onDeleted: (chatId: string) => void;
};

/** The member's stored chats ('Chat History'): open one, delete one, or start a new one. */
export function ChatHistoryPanel({
  reloadKey,
  openChatId,
  onOpen,
  onNewConversation,
  onDeleted,
}: ChatHistoryPanelProps) {
  const headingId = useId();
  const [load, setLoad] = useState<Load>({ status: 'loading' });
  const [attempt, setAttempt] = useState(0);
  const [confirming, setConfirming] = useState<ChatSummary | null>(null);
  const [deleting, setDeleting] = useState(false);
  const [deleteError, setDeleteError] = useState<string | null>(null);

  useEffect(() => {
    const controller = new AbortController();
    // A reload keeps the list on screen; only the first load shows the loading line.
    setLoad((current) => (current.status === 'loaded' ? current : { status: 'loading' }));
    chatApi
      .list(controller.signal)
      .then((chats) => setLoad({ status: 'loaded', chats }))
      .catch(() => {
        if (controller.signal.aborted) return;
        setLoad((current) => (current.status === 'loaded' ? current : { status: 'failed' }));
      });
    return () => controller.abort();
  }, [reloadKey, attempt]);

  function askToDelete(chat: ChatSummary) {
    setDeleteError(null);
    setConfirming(chat);
  }

  async function confirmDelete(chat: ChatSummary) {
    setDeleting(true);
    setDeleteError(null);
    try {
      await chatApi.remove(chat.id);
      setLoad((current) =>
        current.status === 'loaded'
          ? { status: 'loaded', chats: current.chats.filter((item) => item.id !== chat.id) }
          : current,
      );
      setConfirming(null);
      onDeleted(chat.id);
    } catch {
      setDeleteError(DELETE_FAILED_TEXT);
    } finally {
      setDeleting(false);
    }
  }

  return (
    <section className="card chat-history" aria-labelledby={headingId}>
      <h2 id={headingId} className="chat-history__title">
        Chat History
      </h2>
      <Button className="chat-history__new" onClick={onNewConversation}>
        + New Conversation
      </Button>
      <h3 className="chat-history__subtitle">Your Conversations</h3>

      {load.status === 'loading' && (
        <p className="chat-history__status" role="status">
          Loading your conversations…
        </p>
      )}
      {load.status === 'failed' && (
        <div className="chat-history__status" role="alert">
          <p>{LOAD_FAILED_TEXT}</p>
          <Button variant="secondary" onClick={() => setAttempt((count) => count + 1)}>
            Try again
          </Button>
        </div>
      )}
      {load.status === 'loaded' &&
        (load.chats.length === 0 ? (
          <div className="chat-history__empty">
            <p className="chat-history__empty-title">No conversation history yet</p>
            <p className="chat-history__empty-text">Start a new conversation!</p>
          </div>
        ) : (
          <ul className="chat-history__list" aria-label="Your Conversations">
            {load.chats.map((chat) => {
              const titleId = `${headingId}-${chat.id}`;
              const date = formatChatDate(chat.timestamp);
              return (
                <li key={chat.id} className="chat-history__item">
                  <button
                    type="button"
                    className="chat-history__open"
                    aria-current={chat.id === openChatId ? 'true' : undefined}
                    onClick={() => onOpen(chat.id)}
                  >
                    <span id={titleId} className="chat-history__chat-title">
                      {chat.listTitle}
                    </span>
                    {chat.preview && <span className="chat-history__preview">{chat.preview}</span>}
                    {date && (
                      <time className="chat-history__date" dateTime={chat.timestamp}>
                        {date}
                      </time>
                    )}
                  </button>
                  <Button
                    variant="secondary"
                    className="chat-history__delete"
                    aria-describedby={titleId}
                    onClick={() => askToDelete(chat)}
                  >
                    Delete
                  </Button>
                </li>
              );
            })}
          </ul>
        ))}

      {confirming && (
        <ConfirmDialog
          title={DELETE_QUESTION}
          error={deleteError}
          busy={deleting}
          onConfirm={() => void confirmDelete(confirming)}
          onCancel={() => setConfirming(null)}
        >
          “{confirming.listTitle}” will be removed for good.
        </ConfirmDialog>
      )}
    </section>
  );
}
