import { useState, type FormEvent } from 'react';
import { Button } from '../../components/Button';
import { enterToSend } from '../../lib/enter-to-send';

type ChatComposerProps = {
  /** Resolves true once the message is taken; the field is then cleared. */
  onSend: (text: string) => Promise<boolean>;
  busy: boolean;
  checkoutBusy: boolean;
  /** The final message exists: further sends are ignored, so the field closes. */
  finished: boolean;
};

export function ChatComposer({ onSend, busy, checkoutBusy, finished }: ChatComposerProps) {
  const [text, setText] = useState('');

  async function submit() {
    const submitted = text;
    if (submitted.trim() === '') return;
    const taken = await onSend(submitted);
    // Whatever the visitor typed meanwhile stays; a message that was not taken stays too.
    if (taken) setText((current) => (current === submitted ? '' : current));
  }

  const onKeyDown = enterToSend(() => void submit());

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    void submit();
  }

  return (
    <form className="chat-composer" onSubmit={onSubmit}>
      <textarea
        className="chat-composer__input"
        aria-label="Your question"
        placeholder="Type your question here..."
        rows={2}
        disabled={finished}
        value={finished ? '' : text}
        onChange={(event) => setText(event.target.value.replace(/^\s+/, ''))}
        onKeyDown={onKeyDown}
      />
      <Button
        type="submit"
        className="chat-composer__send"
        disabled={finished || text.trim() === '' || checkoutBusy}
        aria-busy={busy}
      >
        {busy ? '...' : 'Send'}
      </Button>
    </form>
  );
}
