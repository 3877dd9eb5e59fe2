import { useState, type FormEvent } from 'react';
import { Button } from '../../components/Button';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { ApiError } from '../../lib/api';
import { adminApi } from './api';
import { formatCount } from './format';

/** "1 task", "2 tasks". */
function some(count: number, thing: string): string {
  return `${formatCount(count)} ${thing}${count === 1 ? '' : 's'}`;
}

export const DELETE_FAILED = 'The account could not be deleted. Please try again.';
/** Answers about the admin's own password: the dialog stays open for another try. */
const PASSWORD_ERRORS = new Set(['password_required', 'wrong_password', 'too_many_requests']);

/**
 * Deletes an account when its owner asks for their data to go: the server cancels the running
 * subscription at once, then deletes the account with its chats, tasks and the visits it came
 * from. The day's dashboard figures, which name no one, stay.
 */
export function DeleteAccount() {
  const [email, setEmail] = useState('');
  const [confirming, setConfirming] = useState<string | null>(null);
  const [password, setPassword] = useState('');
  const [passwordError, setPasswordError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);

  function ask(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    setDone(null);
    setError(null);
    const address = email.trim();
    if (!address) {
      setError('Enter the email address of the account to delete.');
      return;
    }
    setPassword('');
    setPasswordError(null);
    setConfirming(address);
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
      cancel();
    } catch (cause) {
      if (cause instanceof ApiError && PASSWORD_ERRORS.has(cause.code)) {
        setPasswordError(cause.message);
      } else {
        setError(cause instanceof ApiError && cause.status !== 500 ? cause.message : DELETE_FAILED);
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
        tasks, funnel conversations and analytics events are deleted. Payment records stay for the books.
      </p>
      <form className="admin-filters admin-delete" onSubmit={ask} noValidate>
        <label className="admin-field admin-delete__field">
          <span className="admin-field__label">Email address</span>
          <input
            type="email"
            className="admin-field__control"
            value={email}
            autoComplete="off"
            onChange={(event) => setEmail(event.target.value)}
          />
        </label>
        <Button type="submit" variant="danger" disabled={busy}>
          Delete account
        </Button>
      </form>
      {error && (
        <p className="form__error" role="alert">
          {error}
        </p>
      )}
      {done && (
        <p className="admin-delete__done" role="status">
          {done}
        </p>
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
