import { useLayoutEffect, useRef, type KeyboardEvent, type ReactNode } from 'react';

type SidebarProps = {
  id: string;
  /** Names the sidebar for assistive technology and its close button. */
  label: string;
  onClose: () => void;
  children: ReactNode;
};

/**
 * A panel beside the chat (over it on phones). Focus moves in when it opens and goes back to the
 * button that opened it when it closes; Escape inside it closes it.
 */
export function Sidebar({ id, label, onClose, children }: SidebarProps) {
  const ref = useRef<HTMLElement>(null);

  useLayoutEffect(() => {
    const sidebar = ref.current;
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    sidebar?.focus();
    return () => {
      const active = document.activeElement;
      const focusWasInside = active === null || active === document.body || (sidebar?.contains(active) ?? false);
      if (focusWasInside && opener?.isConnected) opener.focus();
    };
  }, []);

  function onKeyDown(event: KeyboardEvent<HTMLElement>) {
    // Keys pressed in a dialog opened from here bubble through React's tree but are the dialog's.
    if (event.key !== 'Escape' || !(event.target instanceof Node) || !ref.current?.contains(event.target)) return;
    event.preventDefault();
    onClose();
  }

  return (
    <aside id={id} ref={ref} tabIndex={-1} className="members-sidebar" aria-label={label} onKeyDown={onKeyDown}>
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
