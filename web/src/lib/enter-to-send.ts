import type { KeyboardEvent } from 'react';

/**
 * The chat fields' keys: Enter sends, Shift+Enter starts a new line, and an Enter that ends an IME
 * composition does neither. Returns the textarea's keydown handler.
 */
export function enterToSend(send: () => void) {
  return (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key !== 'Enter' || event.shiftKey || event.nativeEvent.isComposing) return;
    event.preventDefault();
    send();
  };
}
