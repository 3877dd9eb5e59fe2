import {
  useId,
  useLayoutEffect,
  useRef,
  type KeyboardEvent,
  type ReactNode,
  type RefObject,
  type SyntheticEvent,
} from 'react';
import { createPortal } from 'react-dom';

const FOCUSABLE = [
  'a[href]',
  'area[href]',
  'button:not([disabled])',
  'input:not([disabled]):not([type="hidden"])',
  'select:not([disabled])',
  'textarea:not([disabled])',
  'iframe',
  '[contenteditable="true"]',
  '[tabindex]:not([tabindex="-1"])',
].join(',');

function focusableIn(container: HTMLElement): HTMLElement[] {
  return Array.from(container.querySelectorAll<HTMLElement>(FOCUSABLE)).filter(
    (element) => !element.hasAttribute('inert') && element.getAttribute('aria-hidden') !== 'true',
  );
}

type ModalProps = {
  title: ReactNode;
  onClose: () => void;
  children: ReactNode;
  /** Receives focus when the dialog opens; defaults to the first focusable element. */
  initialFocusRef?: RefObject<HTMLElement | null>;
  size?: 'normal' | 'wide';
  className?: string;
};

/**
 * The app's one dialog: a native <dialog> opened with showModal(), so the page behind it is inert
 * and Escape (the browser's close request) closes it. The <dialog> covers the screen and is the
 * backdrop: a click on it, outside the panel, closes it. Tab goes round inside the panel; focus
 * starts on `initialFocusRef` or the first control and goes back to the opener on close. The page
 * decides when it closes: `onClose` asks it to unmount the dialog.
 */
export function Modal({ title, onClose, children, initialFocusRef, size = 'normal', className }: ModalProps) {
  const titleId = useId();
  const dialogRef = useRef<HTMLDialogElement>(null);
  const panelRef = useRef<HTMLDivElement>(null);
  const pressStartedOnBackdrop = useRef(false);
  const onCloseRef = useRef(onClose);
  onCloseRef.current = onClose;
  // Read once per opening: a later change of initialFocusRef must not move focus again.
  const initialFocus = useRef(initialFocusRef);
  /** Set while the dialog is closed because it unmounts, which is no request to close. */
  const unmounting = useRef(false);

  // Remember the opener before focus moves into the dialog, and give focus back on close.
  useLayoutEffect(() => {
    const dialog = dialogRef.current;
    const panel = panelRef.current;
    if (!dialog || !panel) return undefined;
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    unmounting.current = false;
    if (!dialog.open) dialog.showModal();
    (initialFocus.current?.current ?? focusableIn(panel)[0] ?? panel).focus();

    const previousOverflow = document.body.style.overflow;
    document.body.style.overflow = 'hidden';

    return () => {
      unmounting.current = true;
      if (dialog.open) dialog.close();
      document.body.style.overflow = previousOverflow;
      if (opener && opener.isConnected) opener.focus();
    };
  }, []);

  function handleCancel(event: SyntheticEvent<HTMLDialogElement>) {
    // A cancelable close request is the page's to carry out. One the browser does not let us
    // cancel (no user action since the last) closes the dialog, and its `close` event says so.
    if (!event.cancelable) return;
    event.preventDefault();
    onClose();
  }

  function handleNativeClose() {
    // Not ours (unmounting) and not followed by showModal() again (StrictMode's second effect).
    if (!unmounting.current && !dialogRef.current?.open) onCloseRef.current();
  }

  function keepTabInside(event: KeyboardEvent<HTMLDialogElement>) {
    const panel = panelRef.current;
    if (event.key !== 'Tab' || event.defaultPrevented || !panel) return;
    const focusable = focusableIn(panel);
    if (focusable.length === 0) {
      event.preventDefault();
      panel.focus();
      return;
    }
    const first = focusable[0];
    const last = focusable[focusable.length - 1];
    const active = document.activeElement;
    if (event.shiftKey && (active === first || active === panel)) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && active === last) {
      event.preventDefault();
      first.focus();
    }
  }

  const panelClasses = ['modal', `modal--${size}`, className].filter(Boolean).join(' ');

  return createPortal(
    <dialog
      ref={dialogRef}
      className="modal-backdrop"
      data-testid="modal-backdrop"
      aria-modal="true"
      aria-labelledby={titleId}
      onCancel={handleCancel}
      onClose={handleNativeClose}
      onKeyDown={keepTabInside}
      onMouseDown={(event) => {
        pressStartedOnBackdrop.current = event.target === event.currentTarget;
      }}
      onClick={(event) => {
        // A press that began inside the panel (e.g. selecting text) must not close it.
        if (event.target === event.currentTarget && pressStartedOnBackdrop.current) onClose();
        pressStartedOnBackdrop.current = false;
      }}
    >
      <div ref={panelRef} className={panelClasses} tabIndex={-1}>
        <div className="modal__header">
          <h2 id={titleId} className="modal__title">
            {title}
          </h2>
          <button type="button" className="modal__close" onClick={onClose} aria-label="Close">
            <span aria-hidden="true" className="modal__close-icon">
              ×
            </span>
            <span aria-hidden="true">Close</span>
          </button>
        </div>
        <div className="modal__body">{children}</div>
      </div>
    </dialog>,
    document.body,
  );
}
