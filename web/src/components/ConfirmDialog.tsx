import { useRef, type ReactNode } from 'react';
import { Button } from './Button';
import { Modal } from './Modal';

type ConfirmDialogProps = {
  title: string;
  /** The question, in the spec's words. */
  children: ReactNode;
  /** Fields the answer needs besides the click (the admin's password, say). */
  fields?: ReactNode;
  /** Why the last attempt failed, if it did. */
  error?: string | null;
  busy: boolean;
  onConfirm: () => void;
  onCancel: () => void;
};

/**
 * Asks before a deletion that cannot be undone (a task, a chat, an account): the question, a red
 * Delete button and Cancel, which has the focus so that Enter does no harm.
 */
export function ConfirmDialog({
  title,
  children,
  fields,
  error,
  busy,
  onConfirm,
  onCancel,
}: ConfirmDialogProps) {
  const cancelRef = useRef<HTMLButtonElement>(null);
  return (
    <Modal title={title} onClose={onCancel} initialFocusRef={cancelRef}>
      <p className="confirm-dialog__text">{children}</p>
      {fields}
      {error && (
        <p className="form__error" role="alert">
          {error}
        </p>
      )}
      <div className="confirm-dialog__actions">
        <Button variant="danger" disabled={busy} onClick={onConfirm}>
          {busy ? 'Deleting...' : 'Delete'}
        </Button>
        <Button ref={cancelRef} variant="secondary" onClick={onCancel}>
          Cancel
        </Button>
      </div>
    </Modal>
  );
}
