// What the Flows page's sections share: the dashboard's card with its head, and a message that
// says how an action went.
import type { ReactNode, Ref } from 'react';

export { Section } from '../sections';

export type Message = { ok: boolean; text: string };

/** A success as a status, a failure as an alert; `children` go after the words (a Reload button). */
export function MessageLine({
  message,
  children,
  ref,
  testId,
}: {
  message: Message | null;
  children?: ReactNode;
  ref?: Ref<HTMLDivElement>;
  testId?: string;
}) {
  if (!message) return null;
  return (
    <div
      ref={ref}
      tabIndex={-1}
      className={message.ok ? 'flows-message flows-message--ok' : 'flows-message flows-message--error'}
      role={message.ok ? 'status' : 'alert'}
      data-testid={testId}
    >
      <p className="flows-message__text">{message.text}</p>
      {children}
    </div>
  );
}

