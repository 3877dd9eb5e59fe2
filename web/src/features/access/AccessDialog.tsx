import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { Button } from '../../components/Button';
import { Field } from '../../components/Field';
import { Modal } from '../../components/Modal';
import { authApi } from '../../lib/auth';
import { fetchCheckoutSuccess, type CheckoutSuccess } from '../../lib/checkout';
import { usePublicConfig } from '../../lib/public-config';
import { useSession } from '../../lib/session';
import {
  ACCOUNT_CREATED,
  BOTH_REQUIRED,
  EMAIL_FOR_ACCOUNT,
  EMAIL_FOR_RESET,
  EMAIL_MISSING,
  LOGIN_SUCCESS,
  LOOKUP_FAILED,
  NO_SESSION,
  RESET_FAILED,
  createFailure,
  signInFailure,
} from './messages';

/** The spec's pause on the success message before the members page. */
export const ACCESS_REDIRECT_DELAY_MS = 2000;

type Step =
  | { step: 'checking' }
  | { step: 'login' }
  | { step: 'success'; text: string }
  | { step: 'error'; text: string };

type Mode = 'sign-in' | 'create';

/** Where an account the checkout created without a password chooses one. */
function accountSetupPath(answer: CheckoutSuccess): string {
  const query = new URLSearchParams({
    success: 'true',
    email: answer.email,
    session: answer.sessionId,
    session_id: answer.paymentSessionId,
  });
  return `/account-setup?${query}`;
}

type Note = { ok: boolean; text: string };

type AccessDialogProps = {
  /** The checkout's tracking id from `?session=`; null when the URL had none. */
  session: string | null;
  /**
   * 'login' skips the checkout lookup: the post-checkout sign-in, when signing in with the
   * checkout's one-time token did not work.
   */
  startAt?: 'checking' | 'login';
  initialEmail?: string;
  onClose: () => void;
};

function LoginForm({ initialEmail, onSuccess }: { initialEmail: string; onSuccess: (text: string) => void }) {
  const { signedIn } = useSession();
  const [mode, setMode] = useState<Mode>('sign-in');
  const [email, setEmail] = useState(initialEmail);
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState<'submitting' | 'resetting' | null>(null);
  const [note, setNote] = useState<Note | null>(null);
  const creating = mode === 'create';

  async function handleSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    const credentials = { email: email.trim(), password };
    if (creating && credentials.email === '') return setNote({ ok: false, text: EMAIL_FOR_ACCOUNT });
    if (!creating && (credentials.email === '' || password === '')) return setNote({ ok: false, text: BOTH_REQUIRED });
    setBusy('submitting');
    setNote(null);
    try {
      const { user } = creating
        ? await authApi.signupByEmail(credentials.email)
        : await authApi.login(credentials);
      // The members page behind then asks the server for the access facts this answer lacks.
      signedIn(user);
      onSuccess(creating ? ACCOUNT_CREATED : LOGIN_SUCCESS);
    } catch (cause) {
      setNote({ ok: false, text: creating ? createFailure(cause) : signInFailure(cause) });
      setBusy(null);
    }
  }

  async function handleForgotPassword() {
    if (busy) return;
    if (email.trim() === '') return setNote({ ok: false, text: EMAIL_FOR_RESET });
    setBusy('resetting');
    setNote(null);
    try {
      const { message } = await authApi.requestReset(email.trim());
      setNote({ ok: true, text: message });
    } catch {
      setNote({ ok: false, text: RESET_FAILED });
    } finally {
      setBusy(null);
    }
  }

  function switchMode() {
    setMode(creating ? 'sign-in' : 'create');
    setNote(null);
  }

  return (
    <form
      className="form access-dialog__form"
      onSubmit={handleSubmit}
      aria-label={creating ? 'Create an account' : 'Sign in'}
      aria-busy={busy !== null}
      noValidate
    >
      <p className="access-dialog__lead">
        {creating
          ? 'Create your account with the email you used at checkout. We will email you a link to choose your password.'
          : 'Sign in with the email you used at checkout.'}
      </p>
      <Field
        id="access-email"
        label="Email"
        type="email"
        autoComplete="email"
        value={email}
        onChange={(event) => setEmail(event.target.value)}
      />
      {!creating && (
        <Field
          id="access-password"
          label="Password"
          type="password"
          autoComplete="current-password"
          value={password}
          onChange={(event) => setPassword(event.target.value)}
        />
      )}
      {note && (
        <p className={note.ok ? 'form__success' : 'form__error'} role={note.ok ? 'status' : 'alert'}>
          {note.text}
        </p>
      )}
      <Button type="submit" className="form__submit" disabled={busy !== null}>
        {creating
          ? busy === 'submitting'
            ? 'Creating account...'
            : 'Create Account'
          : busy === 'submitting'
            ? 'Signing in...'
            : 'Sign In'}
      </Button>
      <div className="access-dialog__links">
        {!creating && (
          <Button variant="link" disabled={busy !== null} onClick={() => void handleForgotPassword()}>
            {busy === 'resetting' ? 'Sending...' : 'Forgot password?'}
          </Button>
        )}
        <Button variant="link" disabled={busy !== null} onClick={switchMode}>
          {creating ? 'Sign in instead' : 'Create an account instead'}
        </Button>
      </div>
    </form>
  );
}

/**
 * 'Access Your Subscription': after a checkout, finds the account's email and lets the person
 * sign in or create the account; then back to the members page.
 */
export function AccessDialog({ session, startAt = 'checking', initialEmail = '', onClose }: AccessDialogProps) {
  const navigate = useNavigate();
  const { supportEmail } = usePublicConfig();
  const { user } = useSession();
  const [state, setState] = useState<Step>({ step: startAt });
  const [email, setEmail] = useState(initialEmail);
  const onCloseRef = useRef(onClose);
  onCloseRef.current = onClose;
  const signedIn = user === undefined ? undefined : user !== null;

  useEffect(() => {
    if (state.step !== 'checking' || signedIn === undefined) return undefined;
    if (signedIn) {
      setState({ step: 'success', text: LOGIN_SUCCESS });
      return undefined;
    }
    if (!session) {
      setState({ step: 'error', text: NO_SESSION });
      return undefined;
    }
    const controller = new AbortController();
    fetchCheckoutSuccess(`?${new URLSearchParams({ session })}`, controller.signal)
      .then((answer) => {
        if (!answer?.email) {
          setState({ step: 'error', text: EMAIL_MISSING });
          return;
        }
        if (answer.hasPassword === false) {
          // The checkout created this account without a password, so signing in cannot work yet.
          navigate(accountSetupPath(answer), { replace: true });
          return;
        }
        setEmail(answer.email);
        setState({ step: 'login' });
      })
      .catch(() => {
        if (!controller.signal.aborted) setState({ step: 'error', text: LOOKUP_FAILED });
      });
    return () => controller.abort();
  }, [state.step, signedIn, session, navigate]);

  useEffect(() => {
    if (state.step !== 'success') return undefined;
    const timer = setTimeout(() => {
      navigate('/', { replace: true });
      onCloseRef.current();
    }, ACCESS_REDIRECT_DELAY_MS);
    return () => clearTimeout(timer);
  }, [state.step, navigate]);

  return (
    <Modal title="Access Your Subscription" onClose={onClose} className="access-dialog">
      {state.step === 'checking' && (
        <p className="access-dialog__checking" role="status">
          <span className="spinner" aria-hidden="true" /> Looking up your account...
        </p>
      )}
      {state.step === 'login' && (
        <LoginForm initialEmail={email} onSuccess={(text) => setState({ step: 'success', text })} />
      )}
      {state.step === 'success' && (
        <p className="form__success access-dialog__success" role="status">
          {state.text}
        </p>
      )}
      {state.step === 'error' && (
        <div className="access-dialog__error">
          <p className="form__error" role="alert">
            {state.text}
          </p>
          {supportEmail && (
            <p className="access-dialog__support">
              Support: <a href={`mailto:${supportEmail}`}>{supportEmail}</a>
            </p>
          )}
          <p className="access-dialog__actions">
            <Link to="/login" className="btn btn--secondary">
              Go to the sign-in page
            </Link>
          </p>
        </div>
      )}
    </Modal>
  );
}
