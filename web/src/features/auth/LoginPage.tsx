import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { Button } from '../../components/Button';
import { Field } from '../../components/Field';
import { SignInForm } from '../../components/SignInForm';
import { useSession } from '../../lib/session';
import { ApiError } from '../../lib/api';
import { accountFormError, authApi } from '../../lib/auth';

const NETWORK_ERROR = 'Network error. Please check your internet connection and try again.';
const RESET_PROBLEM = 'There was a problem sending the password reset email. Please try again later.';

function resetError(cause: unknown): string {
  if (cause instanceof ApiError) {
    // (No 'No account found...': the server answers an address without an account as any other,
    // so the form tells nobody which addresses have accounts; docs/spec.md.)
    if (['invalid_email', 'email_required', 'too_many_requests'].includes(cause.code)) {
      return cause.message;
    }
    if (cause.code === 'network' || cause.code === 'timeout') return NETWORK_ERROR;
  }
  return RESET_PROBLEM;
}

function ForgotPassword({ initialEmail }: { initialEmail: string }) {
  const [email, setEmail] = useState(initialEmail);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);

  async function handleSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    if (email.trim() === '') {
      setResult({ ok: false, text: 'Please enter your email address' });
      return;
    }
    setBusy(true);
    setResult(null);
    try {
      const { message } = await authApi.requestReset(email.trim());
      setResult({ ok: true, text: message });
    } catch (cause) {
      setResult({ ok: false, text: resetError(cause) });
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="form auth-card__reset" onSubmit={handleSubmit} aria-label="Reset your password" noValidate>
      <p className="auth-card__hint">Enter your email and we will send you a link to choose a new password.</p>
      <Field
        id="reset-email"
        label="Email"
        type="email"
        autoComplete="email"
        value={email}
        onChange={(event) => setEmail(event.target.value)}
      />
      {result && (
        <p className={result.ok ? 'form__success' : 'form__error'} role={result.ok ? 'status' : 'alert'}>
          {result.text}
        </p>
      )}
      <Button type="submit" variant="secondary" className="form__submit" disabled={busy}>
        {busy ? 'Sending...' : 'Send reset link'}
      </Button>
    </form>
  );
}

/** The page a reset mail links to: `/login?reset=TOKEN`. */
function ChooseNewPassword({ token, onInvalid }: { token: string; onInvalid: (message: string) => void }) {
  const navigate = useNavigate();
  const { signedIn } = useSession();
  const [checked, setChecked] = useState(false);
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const onInvalidRef = useRef(onInvalid);
  onInvalidRef.current = onInvalid;

  useEffect(() => {
    let live = true;
    authApi
      .checkReset(token)
      .then(() => live && setChecked(true))
      .catch((cause) => live && onInvalidRef.current(cause instanceof Error ? cause.message : String(cause)));
    return () => {
      live = false;
    };
  }, [token]);

  async function handleSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    if (password === '') return setError('Password is required');
    if (password !== confirm) return setError('Passwords do not match');
    setBusy(true);
    setError(null);
    try {
      const { user } = await authApi.confirmReset(token, password);
      signedIn(user);
      navigate('/members');
    } catch (cause) {
      if (cause instanceof ApiError && cause.code === 'reset_link_invalid') return onInvalid(cause.message);
      setError(accountFormError(cause));
      setBusy(false);
    }
  }

  if (!checked) return <p role="status">Checking your reset link...</p>;
  return (
    <form className="form" onSubmit={handleSubmit} aria-label="Choose a new password" noValidate>
      <Field
        id="new-password"
        label="New password"
        type="password"
        autoComplete="new-password"
        value={password}
        onChange={(event) => setPassword(event.target.value)}
      />
      <Field
        id="confirm-password"
        label="Confirm Password"
        type="password"
        autoComplete="new-password"
        value={confirm}
        onChange={(event) => setConfirm(event.target.value)}
      />
      {error && (
        <p className="form__error" role="alert">
          {error}
        </p>
      )}
      <Button type="submit" className="form__submit" disabled={busy}>
        {busy ? 'Saving...' : 'Save new password'}
      </Button>
    </form>
  );
}

export function LoginPage() {
  const navigate = useNavigate();
  const [params, setParams] = useSearchParams();
  const { user, signOut } = useSession();
  const resetToken = params.get('reset');
  // `?email=`: the address a link already knows ('Welcome Back!' after a checkout).
  const knownEmail = params.get('email')?.trim() ?? '';
  // The email typed into the sign-in form, offered to the reset form.
  const [email, setEmail] = useState(knownEmail);
  const [forgotOpen, setForgotOpen] = useState(false);
  const [resetProblem, setResetProblem] = useState<string | null>(null);

  if (resetToken && !resetProblem) {
    return (
      <section className="card auth-card" aria-labelledby="login-title">
        <h1 id="login-title" className="page-title">
          Choose a new password
        </h1>
        <ChooseNewPassword
          token={resetToken}
          onInvalid={(message) => {
            setResetProblem(message);
            setForgotOpen(true);
            setParams({}, { replace: true });
          }}
        />
      </section>
    );
  }

  return (
    <section className="card auth-card" aria-labelledby="login-title">
      <h1 id="login-title" className="page-title">
        Sign in to your account
      </h1>
      {user && (
        <div className="auth-card__signed-in" role="status">
          <p>You are signed in as {user.email}.</p>
          <p className="auth-card__actions">
            <Link to="/" className="btn btn--primary">
              Go to your account
            </Link>
            <Button variant="secondary" onClick={() => void signOut()}>
              Sign out
            </Button>
          </p>
        </div>
      )}
      {resetProblem && (
        <p className="form__error" role="alert">
          {resetProblem}
        </p>
      )}
      <SignInForm
        idPrefix="login"
        initialEmail={knownEmail}
        onSignedIn={() => navigate('/members')}
        onEmailChange={setEmail}
      />
      <p className="auth-card__switch">
        <Link to="/signup">Need an account? Sign up</Link>
      </p>
      <p className="auth-card__switch">
        <Button variant="link" aria-expanded={forgotOpen} onClick={() => setForgotOpen((open) => !open)}>
          Forgot password?
        </Button>
      </p>
      {forgotOpen && <ForgotPassword initialEmail={email} />}
    </section>
  );
}
