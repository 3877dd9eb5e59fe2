import { useEffect, useState } from 'react';
import { useSession } from '../../lib/session';
import { Button } from '../../components/Button';
import { Modal } from '../../components/Modal';
import { fetchShortcuts, saveAccountShortcuts, type Shortcut } from './api';
import { loadSelectedIcons, saveSelectedIcons } from './selection-storage';
import './shortcuts-dialog.css';

/** The accounts this page has given this device's picks to: once each (a failure is not retried). */
const adoptedFor = new Set<string>();

const ACCOUNT_SAVE_FAILED =
  'Your shortcuts are saved on this device, but could not be saved to your account. Please try again.';

type ShortcutList = { status: 'loading' } | { status: 'loaded'; shortcuts: Shortcut[] } | { status: 'failed' };

function useShortcutList(): { list: ShortcutList; retry: () => void } {
  const [list, setList] = useState<ShortcutList>({ status: 'loading' });
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    setList({ status: 'loading' });
    fetchShortcuts(controller.signal)
      .then((shortcuts) => setList({ status: 'loaded', shortcuts }))
      .catch(() => {
        if (!controller.signal.aborted) setList({ status: 'failed' });
      });
    return () => controller.abort();
  }, [attempt]);

  return { list, retry: () => setAttempt((count) => count + 1) };
}

type ShortcutsDialogProps = {
  open: boolean;
  onClose: () => void;
  signedIn: boolean;
  /**
   * The names kept with the account; they win over this device's when the member is signed in,
   * unless the account has none (this device's picks, from before signing up, say, are used then).
   */
  savedOnAccount?: string[];
  /** The names now in effect, after each Save (also when only this device could keep them). */
  onSaved?: (names: string[]) => void;
};

export function ShortcutsDialog({ open, ...props }: ShortcutsDialogProps) {
  // Mounted afresh on each opening, so the ticks start from what is saved, not from an abandoned try.
  return open ? <ShortcutsDialogBody {...props} /> : null;
}

function ShortcutsDialogBody({ onClose, signedIn, savedOnAccount, onSaved }: Omit<ShortcutsDialogProps, 'open'>) {
  const { list, retry } = useShortcutList();
  const [selected, setSelected] = useState<string[]>(() =>
    signedIn && savedOnAccount !== undefined && savedOnAccount.length > 0 ? savedOnAccount : loadSelectedIcons(),
  );
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<string | null>(null);

  function toggle(name: string, ticked: boolean) {
    setSelected((current) => (ticked ? [...current, name] : current.filter((item) => item !== name)));
  }

  async function save(shortcuts: Shortcut[]) {
    // Kept in the list's order; a stored name the list no longer has is let go.
    const names = shortcuts.filter((shortcut) => selected.includes(shortcut.name)).map((shortcut) => shortcut.name);
    saveSelectedIcons(names);
    if (!signedIn) {
      onSaved?.(names);
      onClose();
      return;
    }
    setSaving(true);
    setError(null);
    try {
      const stored = await saveAccountShortcuts(names);
      // The account's answer is what other devices will show; this one should agree with them.
      saveSelectedIcons(stored);
      onSaved?.(stored);
      onClose();
    } catch {
      onSaved?.(names);
      setError(ACCOUNT_SAVE_FAILED);
      setSaving(false);
    }
  }

  return (
    <Modal title="Select Additional Shortcuts" onClose={onClose} size="wide">
      {list.status === 'loading' && (
        <p className="shortcuts-dialog-status" role="status">
          Loading sites…
        </p>
      )}

      {list.status === 'failed' && (
        <div className="shortcuts-dialog-status" role="alert">
          <p>Sorry, we couldn't load the list of sites.</p>
          <Button variant="secondary" onClick={retry}>
            Try again
          </Button>
        </div>
      )}

      {list.status === 'loaded' && (
        <form
          className="shortcuts-dialog-form"
          onSubmit={(event) => {
            event.preventDefault();
            if (!saving) void save(list.shortcuts);
          }}
        >
          <fieldset className="shortcuts-dialog-fieldset">
            <legend className="shortcuts-dialog-lead">Tick the sites you want one click away.</legend>
            <ul className="shortcuts-dialog-grid">
              {list.shortcuts.map((shortcut) => {
                const ticked = selected.includes(shortcut.name);
                const optionClass = ticked
                  ? 'shortcuts-dialog-option shortcuts-dialog-option--ticked'
                  : 'shortcuts-dialog-option';
                return (
                  <li key={shortcut.name}>
                    <label className={optionClass}>
                      <input
                        type="checkbox"
                        checked={ticked}
                        onChange={(event) => toggle(shortcut.name, event.target.checked)}
                      />
                      <img src={shortcut.icon} alt="" width="32" height="32" className="shortcuts-dialog-icon" />
                      <span className="shortcuts-dialog-name">{shortcut.name}</span>
                    </label>
                  </li>
                );
              })}
            </ul>
          </fieldset>

          {error && (
            <p className="form__error" role="alert">
              {error}
            </p>
          )}

          <div className="shortcuts-dialog-actions">
            <Button type="submit" disabled={saving}>
              {saving ? 'Saving...' : 'Save'}
            </Button>
            <Button variant="secondary" onClick={onClose}>
              Cancel
            </Button>
          </div>
        </form>
      )}
    </Modal>
  );
}

/**
 * The chosen shortcuts as links, and the button that opens the dialog to change them. `names`: the
 * account's (signed in); a visitor's are kept on this device. A member whose account has none yet
 * gets this device's picks (made before signing up, say), saved to the account once.
 */
export function SelectedShortcuts({ names }: { names?: string[] }) {
  const { user } = useSession();
  const signedIn = Boolean(user);
  const { list } = useShortcutList();
  const [onThisDevice] = useState(loadSelectedIcons);
  const [savedHere, setSavedHere] = useState<string[] | null>(null);
  const [open, setOpen] = useState(false);

  const adoptDevicePicks = signedIn && names !== undefined && names.length === 0 && onThisDevice.length > 0;
  const accountNames = adoptDevicePicks ? onThisDevice : names;
  const chosenNames = savedHere ?? (signedIn && accountNames !== undefined ? accountNames : onThisDevice);
  const shortcuts = list.status === 'loaded' ? list.shortcuts : [];
  const chosen = shortcuts.filter((shortcut) => chosenNames.includes(shortcut.name));

  // Once the list is known (the account takes only names it lists), in the list's order.
  useEffect(() => {
    if (!adoptDevicePicks || !user || savedHere !== null || list.status !== 'loaded') return;
    if (adoptedFor.has(user.id)) return;
    adoptedFor.add(user.id);
    const picks = list.shortcuts.filter((shortcut) => onThisDevice.includes(shortcut.name)).map((shortcut) => shortcut.name);
    if (picks.length === 0) return;
    saveAccountShortcuts(picks)
      // What the account now has: the dialog starts from it.
      .then((stored) => setSavedHere((current) => current ?? stored))
      .catch(() => {
        // This device still shows them; the next Save in the dialog tries the account again.
      });
  }, [adoptDevicePicks, user, savedHere, list, onThisDevice]);

  return (
    <div className="shortcuts-dialog-row">
      {chosen.length > 0 ? (
        <ul className="shortcuts-dialog-links" aria-label="Your shortcuts">
          {chosen.map((shortcut) => (
            <li key={shortcut.name}>
              <a
                className="shortcuts-dialog-link"
                href={shortcut.url}
                target="_blank"
                rel="noopener noreferrer"
                aria-label={`${shortcut.name} (opens in a new tab)`}
              >
                <img src={shortcut.icon} alt="" width="28" height="28" className="shortcuts-dialog-icon" />
                <span className="shortcuts-dialog-name">{shortcut.name}</span>
              </a>
            </li>
          ))}
        </ul>
      ) : (
        list.status === 'loaded' && (
          <p className="shortcuts-dialog-hint">Pick the sites you use most to keep them one click away.</p>
        )
      )}
      <Button variant="secondary" className="shortcuts-dialog-open" onClick={() => setOpen(true)}>
        Select Additional Shortcuts
      </Button>
      <ShortcutsDialog
        open={open}
        onClose={() => setOpen(false)}
        signedIn={signedIn}
        savedOnAccount={savedHere ?? accountNames}
        onSaved={setSavedHere}
      />
    </div>
  );
}
