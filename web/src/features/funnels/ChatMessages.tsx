import { useEffect, useRef } from 'react';
import { Button } from '../../components/Button';
import type { ChatMessage } from './chat-state';

type ChatMessagesProps = {
  messages: ChatMessage[];
  assistantName: string;
  typing: boolean;
  loading: boolean;
  checkoutBusy: boolean;
  onCheckout: () => void;
};

export function ChatMessages({
  messages,
  assistantName,
  typing,
  loading,
  checkoutBusy,
  onCheckout,
}: ChatMessagesProps) {
  const listRef = useRef<HTMLDivElement>(null);
  const offerRef = useRef<HTMLButtonElement>(null);
  const hasOffer = messages.some((message) => message.showSubscribeButton);

  // The offer is what happens next: keyboard and screen-reader users land on its button.
  useEffect(() => {
    if (hasOffer) offerRef.current?.focus();
  }, [hasOffer]);

  // Keep the newest message in view, as a chat does.
  useEffect(() => {
    const list = listRef.current;
    if (list) list.scrollTop = list.scrollHeight;
  }, [messages.length, typing]);

  return (
    <div ref={listRef} className="chat-messages" role="log" aria-label="Conversation" aria-live="polite">
      {loading && <p className="chat-messages__loading">Connecting you to {assistantName}…</p>}
      {messages.map((message, index) => (
        // The list only grows, or is replaced whole by the server's copy: the position is the identity.
        <div key={index} className={`chat-message chat-message--${message.role}`}>
          {message.role === 'assistant' && (
            <span className="chat-avatar chat-avatar--small" aria-hidden="true">
              {assistantName.charAt(0)}
            </span>
          )}
          <div className="chat-message__bubble">
            <span className="funnel-sr-only">{message.role === 'assistant' ? `${assistantName}:` : 'You:'}</span>
            <p className="chat-message__text">{message.text}</p>
            {message.showSubscribeButton && (
              <Button ref={offerRef} className="chat-message__cta" onClick={onCheckout} disabled={checkoutBusy}>
                Get started &gt;&gt;
              </Button>
            )}
          </div>
        </div>
      ))}
      {typing && (
        <div className="chat-typing" role="status">
          {assistantName} is typing
          <span className="chat-typing__dots" aria-hidden="true">
            <span>.</span>
            <span>.</span>
            <span>.</span>
          </span>
        </div>
      )}
    </div>
  );
}
