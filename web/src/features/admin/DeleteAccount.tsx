import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Button } from '../../components/Button';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { ApiError } from '../../lib/api';
import { useSession } from '../../lib/session';
import { adminApi } from './api';
import { formatCount } from './format';
import { operationsApi, type AccountFound } from './operations-api';
import { formatDay } from './operations-format';
import './operations.css';

/** "1 task", "2 tasks". */
function some(count: number, thing: string): string {
  return `${formatCount(count)} ${thing}${count === 1 ? '' : 's'}`;
}

export const OWN_ACCOUNT = 'You cannot delete the account you are signed in with.';
export const DELETE_FAILED = 'The account could not be deleted. Please try again.';
export const FIND_FAILED = 'The account could not be looked up. Please try again.';
/** Answers about the admin's own password: the dialog stays open for another try. */
const PASSWORD_ERRORS = new Set(['password_required', 'wrong_password', 'too_many_requests']);

/**
 * Deletes an account when its owner asks for their data to go. The account is found first (its
 * address, plan and age shown), so the operator sees what they delete: the server cancels the
 * running subscription at once, then deletes the account with its chats, tasks and the visits it
 * came from. The day's dashboard figures, which name no one, stay.
 */
export function DeleteAccount() {
  const signedInAs = useSession().user?.email.toLowerCase();
  const [email, setEmail] = useState('');
  const [finding, setFinding] = useState(false);
  const [found, setFound] = useState<AccountFound | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [password, setPassword] = useState('');
  const [passwordError, setPasswordError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const emailRef = useRef<HTMLInputElement>(null);
  /** Bumped by every look-up and every change of the address: an older answer is dropped. */
  const lookup = useRef(0);

  // The account is gone with its details and button: the address field takes the focus back.
  useEffect(() => {
    if (done) emailRef.current?.focus();
  }, [done]);

  async function find(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    setDone(null);
    setError(null);
    setFound(null);
    const address = email.trim();
    lookup.current += 1;
    if (!address) {
      setError('Enter the email address of the account to delete.');
      return;
    }
    const asked = lookup.current;
    setFinding(true);
    try {
      const account = await operationsApi.findAccount(address);
      if (lookup.current === asked) setFound(account);
    } catch (cause) {
      if (lookup.current === asked) {
        // The server's own answers (no such account, a malformed address) as it says them.
        setError(
          cause instanceof ApiError && cause.status >= 400 && cause.status < 500 && cause.code !== 'http_error'
            ? cause.message
            : FIND_FAILED,
        );
      }
    } finally {
      if (lookup.current === asked) setFinding(false);
    }
  }

  function ask(account: AccountFound) {
    setDone(null);
    setError(null);
    setPassword('');
    setPasswordError(null);
    setConfirming(account.email);
  }

  function cancel() {
    setConfirming(null);
    setPassword('');
    setPasswordError(null);
  }

  async function confirm(address: string) {
    if (password === '') {
      setPasswordError('Enter your own password to delete an account.');
      return;
    }
    setBusy(true);
    setError(null);
    setPasswordError(null);
    try {
      const answer = await adminApi.deleteAccount(address, password);
      const { deleted } = answer;
      setDone(
        `${answer.message} Gone with it: ${some(deleted.chats, 'chat')}, ${some(deleted.tasks, 'task')}, ` +
          `${some(deleted.funnelConversations, 'funnel conversation')} and ${some(deleted.events, 'analytics event')}.`,
      );
      setEmail('');
      setFound(null);
      cancel();
    } catch (cause) {
      if (cause instanceof ApiError && PASSWORD_ERRORS.has(cause.code)) {
        setPasswordError(cause.message);
      } else {
        setError(cause instanceof ApiError && cause.status !== 500 ? cause.message : DELETE_FAILED);
        // Gone meanwhile: nothing is left to delete.
        if (cause instanceof ApiError && cause.code === 'user_not_found') setFound(null);
        cancel();
      }
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="card admin-section" aria-labelledby="admin-delete-title">
      <h2 id="admin-delete-title" className="admin-section__title">
        Delete an account
      </h2>
      <p className="admin-section__note">
        When someone asks for their data to be deleted: their subscription is canceled at once, and their account, chats,
        tasks, funnel conversations and analytics events are deleted. Payment records stay for the books. Find the
        account first, then delete it.
      </p>
      <form className="admin-filters admin-delete ops-form" onSubmit={(event) => void find(event)} noValidate>
        <label className="admin-field admin-delete__field ops-form__field">
          <span className="admin-field__label">Email address</span>
          <input
            ref={emailRef}
            type="email"
            className="admin-field__control"
            value={email}
            autoComplete="off"
            onChange={(event) => {
              setEmail(event.target.value);
              // What was found was for the address before: its button must not delete another one.
              lookup.current += 1;
              setFinding(false);
              setFound(null);
            }}
          />
        </label>
        <Button type="submit" variant="secondary" disabled={busy || finding} aria-busy={finding}>
          {finding ? 'Finding...' : 'Find the account'}
        </Button>
      </form>
      {error && (
        <p className="form__error ops-message" role="alert">
          {error}
        </p>
      )}
      {done && (
        <p className="admin-delete__done" role="status">
          {done}
        </p>
      )}
      {/* Always there, so screen readers hear what was found as it shows (it is no status of an action). */}
      <p className="ops-sr-only" aria-live="polite">
        {found ? `Found the account ${found.email}: ${found.planLabel}, since ${formatDay(found.createdAt)}.` : ''}
      </p>
      {found && (
        <div className="ops-account" role="group" aria-label={`The account ${found.email}`}>
          <dl className="ops-account__facts">
            <div>
              <dt>Address</dt>
              <dd>{found.email}</dd>
            </div>
            <div>
              <dt>Plan</dt>
              <dd>{found.planLabel}</dd>
            </div>
            <div>
              <dt>Account since</dt>
              <dd>{formatDay(found.createdAt)}</dd>
            </div>
          </dl>
          {found.email.toLowerCase() === signedInAs ? (
            // The server refuses it too (409 own_account); the form says so before asking.
            <p className="admin-section__note">{OWN_ACCOUNT}</p>
          ) : (
            <Button variant="danger" disabled={busy} onClick={() => ask(found)}>
              Delete this account
            </Button>
          )}
        </div>
      )}
      {confirming && (
        <ConfirmDialog
          title="Delete account"
          busy={busy}
          error={passwordError}
          onConfirm={() => void confirm(confirming)}
          onCancel={cancel}
          fields={
            <label className="admin-field admin-delete__password">
              <span className="admin-field__label">Your password</span>
              <input
                type="password"
                className="admin-field__control"
                value={password}
                autoComplete="current-password"
                onChange={(event) => setPassword(event.target.value)}
              />
            </label>
          }
        >
          Are you sure you want to delete the account {confirming}? Any running subscription is canceled at once, and this
          cannot be undone.
        </ConfirmDialog>
      )}
    </section>
  );
}
