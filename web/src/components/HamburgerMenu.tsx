import { useEffect, useId, useRef, useState, type KeyboardEvent } from 'react';
import { Link } from 'react-router';
import { LEGAL_DOCUMENTS, type LegalSlug } from '../lib/legal';
import { useSession } from '../lib/session';
import { LegalDialog } from './LegalDialog';
import './HamburgerMenu.css';

/**
 * The header's menu button: the four legal dialogs, and for an admin (as `/api/auth/me` says)
 * the operator's dashboard above them. A menu button as assistive technology expects it: arrows,
 * Home and End move between the entries, Escape, Tab away or a click elsewhere close it.
 */
export function HamburgerMenu() {
  const admin = useSession().user?.admin === true;
  const [open, setOpen] = useState(false);
  const [openSlug, setOpenSlug] = useState<LegalSlug | null>(null);
  const menuId = useId();
  const containerRef = useRef<HTMLDivElement>(null);
  const buttonRef = useRef<HTMLButtonElement>(null);
  /** The entries in order: the dashboard link (admins) first, then the legal dialogs. */
  const itemRefs = useRef<Array<HTMLElement | null>>([]);
  const legalOffset = admin ? 1 : 0;
  /** Which entry takes focus when the menu opens: the first, or the last (Arrow Up on the button). */
  const focusOnOpen = useRef<'first' | 'last'>('first');

  useEffect(() => {
    if (!open) return undefined;
    const items = itemRefs.current.filter((item): item is HTMLElement => item !== null);
    (focusOnOpen.current === 'last' ? items[items.length - 1] : items[0])?.focus();

    function onPointerDown(event: Event) {
      if (event.target instanceof Node && !containerRef.current?.contains(event.target)) setOpen(false);
    }
    function onKeyDown(event: globalThis.KeyboardEvent) {
      if (event.key !== 'Escape') return;
      event.preventDefault();
      setOpen(false);
      buttonRef.current?.focus();
    }
    document.addEventListener('mousedown', onPointerDown);
    document.addEventListener('touchstart', onPointerDown);
    document.addEventListener('keydown', onKeyDown);
    return () => {
      document.removeEventListener('mousedown', onPointerDown);
      document.removeEventListener('touchstart', onPointerDown);
      document.removeEventListener('keydown', onKeyDown);
    };
  }, [open]);

  function openMenu(focus: 'first' | 'last') {
    focusOnOpen.current = focus;
    setOpen(true);
  }

  function onButtonKeyDown(event: KeyboardEvent<HTMLButtonElement>) {
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      openMenu(event.key === 'ArrowDown' ? 'first' : 'last');
    }
  }

  function onItemKeyDown(event: KeyboardEvent<HTMLElement>, index: number) {
    const items = itemRefs.current.filter((item): item is HTMLElement => item !== null);
    const last = items.length - 1;
    const target = {
      ArrowDown: index === last ? 0 : index + 1,
      ArrowUp: index === 0 ? last : index - 1,
      Home: 0,
      End: last,
    }[event.key];
    if (target === undefined) return;
    event.preventDefault();
    items[target]?.focus();
  }

  function choose(slug: LegalSlug) {
    setOpen(false);
    // The dialog gives focus back to what had it when it opened: the menu button, which stays.
    buttonRef.current?.focus();
    setOpenSlug(slug);
  }

  return (
    <div
      ref={containerRef}
      className="site-menu"
      onBlur={(event) => {
        // Focus moving elsewhere (Tab away) closes it; a click elsewhere is the mousedown's.
        const next = event.relatedTarget;
        if (open && next instanceof Node && !containerRef.current?.contains(next)) setOpen(false);
      }}
    >
      <button
        ref={buttonRef}
        type="button"
        className="site-menu__button"
        aria-label="Menu"
        aria-haspopup="menu"
        aria-expanded={open}
        aria-controls={open ? menuId : undefined}
        onClick={() => (open ? setOpen(false) : openMenu('first'))}
        onKeyDown={onButtonKeyDown}
      >
        <span className="site-menu__bars" aria-hidden="true">
          <span />
          <span />
          <span />
        </span>
      </button>
      {open && (
        <ul id={menuId} role="menu" aria-label="Menu" className="site-menu__list">
          {admin && (
            <>
              <li role="none">
                <Link
                  ref={(element) => {
                    itemRefs.current[0] = element;
                  }}
                  to="/admin"
                  role="menuitem"
                  className="site-menu__item site-menu__item--link"
                  onClick={() => setOpen(false)}
                  onKeyDown={(event) => onItemKeyDown(event, 0)}
                >
                  Dashboard
                </Link>
              </li>
              <li role="separator" className="site-menu__separator" />
            </>
          )}
          {LEGAL_DOCUMENTS.map(({ slug, title }, legalIndex) => (
            <li key={slug} role="none">
              <button
                ref={(element) => {
                  itemRefs.current[legalOffset + legalIndex] = element;
                }}
                type="button"
                role="menuitem"
                className="site-menu__item"
                onClick={() => choose(slug)}
                onKeyDown={(event) => onItemKeyDown(event, legalOffset + legalIndex)}
              >
                {title}
              </button>
            </li>
          ))}
        </ul>
      )}
      {openSlug && <LegalDialog slug={openSlug} onClose={() => setOpenSlug(null)} />}
    </div>
  );
}
