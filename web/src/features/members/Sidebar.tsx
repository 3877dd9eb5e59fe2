import { useCallback, useLayoutEffect, useRef, type KeyboardEvent, type ReactNode } from 'react';
import { useNarrowScreen } from './narrow-screen';

type SidebarProps = {
  id: string;
  /** Names the sidebar for assistive technology and its close button. */
  label: string;
  onClose: () => void;
  children: ReactNode;
};

/** The button whose `aria-controls` names the sidebar: the toggle that opened it. */
function toggleFor(id: string): HTMLElement | null {
  for (const element of Array.from(document.querySelectorAll<HTMLElement>('[aria-controls]'))) {
    if (element.getAttribute('aria-controls') === id) return element;
  }
  return null;
}

/**
 * A panel beside the chat: a complementary landmark. On phones it covers the page and is a modal
 * dialog: the rest of the page is inert until it closes. Focus moves in when it opens and goes
 * back to the button that opened it when it closes; Escape inside it closes it.
 */
export function Sidebar({ id, label, onClose, children }: SidebarProps) {
  const ref = useRef<HTMLElement>(null);
  const narrow = useNarrowScreen();
  /** The elements this sidebar made inert, to give back. */
  const inerted = useRef<Element[]>([]);
  const onCloseRef = useRef(onClose);
  onCloseRef.current = onClose;

  const release = useCallback(() => {
    for (const element of inerted.current) element.removeAttribute('inert');
    inerted.current = [];
  }, []);

  useLayoutEffect(() => {
    const sidebar = ref.current;
    const active = document.activeElement;
    const opener = toggleFor(id) ?? (active instanceof HTMLElement && active !== document.body ? active : null);
    sidebar?.focus();
    return () => {
      // The page must be usable again before focus can go back to it.
      release();
      const current = document.activeElement;
      const focusWasInside = current === null || current === document.body || (sidebar?.contains(current) ?? false);
      if (focusWasInside && opener?.isConnected) opener.focus();
    };
    // Once per opening: neither the id nor `release` changes while the sidebar is open.
  }, [id, release]);

  // Over the page, everything else (the chat, the rest of the page, header and footer) is inert.
  // Dialogs opened from the sidebar live at the end of <body>, outside what is made inert.
  useLayoutEffect(() => {
    const sidebar = ref.current;
    if (!narrow || !sidebar) return undefined;
    const made: Element[] = [];
    for (let node: Element = sidebar; node.parentElement && node.parentElement !== document.body; node = node.parentElement) {
      for (const sibling of Array.from(node.parentElement.children)) {
        if (sibling !== node && !sibling.hasAttribute('inert')) {
          sibling.setAttribute('inert', '');
          made.push(sibling);
        }
      }
    }
    inerted.current = made;
    const active = document.activeElement;
    if (!(active instanceof Node) || !sidebar.contains(active)) sidebar.focus();

    // With the page inert, focus that left the sidebar (Tab past its end) rests on <body>: Escape
    // still closes it there.
    function onDocumentKeyDown(event: globalThis.KeyboardEvent) {
      if (event.key !== 'Escape' || event.defaultPrevented || event.target !== document.body) return;
      event.preventDefault();
      onCloseRef.current();
    }
    document.addEventListener('keydown', onDocumentKeyDown);
    return () => {
      document.removeEventListener('keydown', onDocumentKeyDown);
      release();
    };
  }, [narrow, release]);

  function onKeyDown(event: KeyboardEvent<HTMLElement>) {
    // Keys pressed in a dialog opened from here bubble through React's tree but are the dialog's.
    if (event.key !== 'Escape' || !(event.target instanceof Node) || !ref.current?.contains(event.target)) return;
    event.preventDefault();
    onClose();
  }

  return (
    <aside
      id={id}
      ref={ref}
      tabIndex={-1}
      className="members-sidebar"
      role={narrow ? 'dialog' : undefined}
      aria-modal={narrow ? true : undefined}
      aria-label={label}
      onKeyDown={onKeyDown}
    >
      <div className="members-sidebar__bar">
        <button type="button" className="members-sidebar__close" aria-label={`Close ${label}`} onClick={onClose}>
          <span aria-hidden="true">×</span>
          <span aria-hidden="true">Close</span>
        </button>
      </div>
      {children}
    </aside>
  );
}
