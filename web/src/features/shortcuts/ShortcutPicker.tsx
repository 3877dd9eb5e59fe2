import { useCallback, useEffect, useId, useRef, useState } from 'react';
import { Button } from '../../components/Button';
import { fetchShortcuts, type Shortcut } from './api';
import { loadSelectedIcons, saveSelectedIcons } from './selection-storage';
import { useStickyBelowViewport } from './useStickyBelowViewport';

/** The spec's grid shows this many sites until 'Show More' is pressed. */
export const INITIAL_VISIBLE_SHORTCUTS = 10;

type LoadState = { status: 'loading' } | { status: 'loaded'; shortcuts: Shortcut[] } | { status: 'failed' };

export function ShortcutPicker({ onSaveFavorites }: { onSaveFavorites: () => void }) {
  const gridId = useId();
  const [load, setLoad] = useState<LoadState>({ status: 'loading' });
  const [attempt, setAttempt] = useState(0);
  const [expanded, setExpanded] = useState(false);
  const [selected, setSelected] = useState<string[]>(loadSelectedIcons);
  const saveAnchorRef = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const controller = new AbortController();
    setLoad({ status: 'loading' });
    fetchShortcuts(controller.signal)
      .then((shortcuts) => setLoad({ status: 'loaded', shortcuts }))
      .catch(() => {
        if (!controller.signal.aborted) setLoad({ status: 'failed' });
      });
    return () => controller.abort();
  }, [attempt]);

  const toggle = useCallback((name: string) => {
    setSelected((current) => {
      const next = current.includes(name) ? current.filter((item) => item !== name) : [...current, name];
      saveSelectedIcons(next);
      return next;
    });
  }, []);

  const shortcuts = load.status === 'loaded' ? load.shortcuts : [];
  const visible = expanded ? shortcuts : shortcuts.slice(0, INITIAL_VISIBLE_SHORTCUTS);
  // A stored name that is no longer on the list counts for nothing.
  const selectedCount = shortcuts.filter((shortcut) => selected.includes(shortcut.name)).length;
  const hasSelection = selectedCount > 0;
  const sticky = useStickyBelowViewport(saveAnchorRef, hasSelection, `${visible.length}:${selectedCount}`);

  if (load.status === 'loading') {
    return (
      <p className="shortcut-picker__status" role="status">
        Loading sites…
      </p>
    );
  }

  if (load.status === 'failed') {
    return (
      <div className="shortcut-picker__status" role="alert">
        <p>Sorry, we couldn't load the list of sites.</p>
        <Button variant="secondary" onClick={() => setAttempt((count) => count + 1)}>
          Try again
        </Button>
      </div>
    );
  }

  return (
    <div className="shortcut-picker">
      <ul id={gridId} className="shortcut-grid" aria-label="Sites you can add to your favorites">
        {visible.map((shortcut) => {
          const isSelected = selected.includes(shortcut.name);
          return (
            <li key={shortcut.name}>
              <button
                type="button"
                className="shortcut-tile"
                aria-pressed={isSelected}
                onClick={() => toggle(shortcut.name)}
              >
                <img src={shortcut.icon} alt="" width="56" height="56" className="shortcut-tile__icon" />
                <span className="shortcut-tile__name">{shortcut.name}</span>
                <span className="shortcut-tile__check" aria-hidden="true">
                  ✓
                </span>
              </button>
            </li>
          );
        })}
      </ul>

      {shortcuts.length > INITIAL_VISIBLE_SHORTCUTS && (
        <div className="shortcut-picker__more">
          <Button
            variant="secondary"
            aria-expanded={expanded}
            aria-controls={gridId}
            onClick={() => setExpanded((value) => !value)}
          >
            {expanded ? 'Show Less' : 'Show More'}
          </Button>
        </div>
      )}

      {hasSelection && (
        // The anchor keeps the button's place in the page; only the bar inside it becomes fixed.
        <div ref={saveAnchorRef} className="save-favorites">
          <div
            className={sticky ? 'save-favorites__bar save-favorites__bar--sticky' : 'save-favorites__bar'}
            data-sticky={sticky}
          >
            <p className="save-favorites__count" aria-live="polite">
              {selectedCount === 1 ? '1 site selected' : `${selectedCount} sites selected`}
            </p>
            <Button className="save-favorites__button" onClick={onSaveFavorites}>
              Save Favorites
            </Button>
          </div>
        </div>
      )}
    </div>
  );
}
