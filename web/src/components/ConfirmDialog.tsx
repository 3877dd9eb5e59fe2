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
  /** The red button's words, and while it works ('Delete', 'Deleting...' unless said). */
  confirmLabel?: string;
  busyLabel?: string;
  /** The button that leaves things as they are ('Cancel' unless said). */
  cancelLabel?: string;
};

/**
 * Asks before a step that cannot be undone (deleting a task, a chat, an account; canceling a
 * payment): the question, a red button (Delete unless said) and Cancel, which has the focus so
 * that Enter does no harm.
 */
export function ConfirmDialog({
  title,
  children,
  fields,
  error,
  busy,
  onConfirm,
  onCancel,
  confirmLabel = 'Delete',
  busyLabel = 'Deleting...',
  cancelLabel = 'Cancel',
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
          {busy ? busyLabel : confirmLabel}
        </Button>
        <Button ref={cancelRef} variant="secondary" onClick={onCancel}>
          {cancelLabel}
        </Button>
      </div>
    </Modal>
  );
}
