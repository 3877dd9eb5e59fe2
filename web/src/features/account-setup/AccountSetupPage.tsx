import { useEffect, useState, type FormEvent } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { Button } from '../../components/Button';
import { Field } from '../../components/Field';
import { usePublicConfig } from '../../lib/public-config';
import { useSession } from '../../lib/session';
import { ApiError } from '../../lib/api';
import { accountFormError } from '../../lib/auth';
import { accountSetupApi, type AccountSetupStatus } from './api';

const INVALID_ACCESS = 'Invalid access. This page is for checkout completion only.';
/** The spec's pause on the success screen before the members page. */
const REDIRECT_DELAY_MS = 3000;

type Phase =
  | { phase: 'checking' }
  /** `status` is null when the server knows no checkout for this browser (another device, say). */
  | { phase: 'setup'; status: AccountSetupStatus | null }
  /** The server knows no checkout (nor a signed-in member without a password) for this browser. */
  | { phase: 'no-session' }
  | { phase: 'success'; trialActive: boolean };

type Failure = { text: string; noSession: boolean };

/** What someone who paid can do when this browser holds no checkout (another device, an old link). */
function NoSessionHint({ email }: { email: string }) {
  const login = email ? `/login?${new URLSearchParams({ email })}` : '/login';
  return (
    <p className="account-setup__error-hint">
      If you already paid, open the sign-in link in your welcome email, or use <Link to={login}>Forgot password?</Link>{' '}
      on the sign-in page to choose a password.
    </p>
  );
}

function ReturnHome() {
  const navigate = useNavigate();
  return <Button onClick={() => navigate('/')}>Return to Home</Button>;
}

function SetupForm({
  status,
  queryEmail,
  onDone,
}: {
  status: AccountSetupStatus | null;
  queryEmail: string;
  onDone: (trialActive: boolean) => void;
}) {
  const { signedIn } = useSession();
  const knownEmail = status?.email || queryEmail;
  const locked = knownEmail !== '';
  // Someone who already has an account proves it with the password they know; asking for it twice
  // would only add a chance to mistype, and a mistyped one is answered by the server anyway
  // ('Incorrect password for existing account'). So the confirmation is for new passwords only.
  const existingAccount = status?.hasPassword === true;
  const afterProof = status?.mustChoosePassword === true;
  const [email, setEmail] = useState(knownEmail);
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure | null>(null);

  function refuse(text: string) {
    setFailure({ text, noSession: false });
  }

  async function handleSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    if (email.trim() === '') return refuse('Email is required');
    if (password === '') return refuse('Password is required');
    if (!existingAccount && password !== confirm) return refuse('Passwords do not match');
    setBusy(true);
    setFailure(null);
    try {
      const answer = await accountSetupApi.setUp({ email: email.trim(), password });
      signedIn(answer.user);
      onDone(answer.trialActive);
    } catch (cause) {
      setFailure({
        text: accountFormError(cause),
        noSession: cause instanceof ApiError && cause.code === 'no_session',
      });
      setBusy(false);
    }
  }

  return (
    <>
      <p className="auth-card__lead">
        {existingAccount
          ? 'You already have an account with this email. Enter your existing password to continue.'
          : afterProof
            ? 'Your email address is confirmed. For your safety, choose a new password before you go on. Any other device signed in to this account has been signed out.'
            : 'Your payment went through. Choose a password so you can sign in to your account.'}
      </p>
      <form className="form" onSubmit={handleSubmit} aria-busy={busy} noValidate>
        <Field
          id="setup-email"
          label="Email"
          hint={locked && !afterProof ? 'The email you used at checkout.' : undefined}
          type="email"
          autoComplete="email"
          readOnly={locked}
          value={email}
          onChange={(event) => setEmail(event.target.value)}
        />
        <Field
          id="setup-password"
          label="Password"
          type="password"
          autoComplete={existingAccount ? 'current-password' : 'new-password'}
          value={password}
          onChange={(event) => setPassword(event.target.value)}
        />
        {!existingAccount && (
          <Field
            id="setup-confirm"
            label="Confirm Password"
            type="password"
            autoComplete="new-password"
            value={confirm}
            onChange={(event) => setConfirm(event.target.value)}
          />
        )}
        {failure && (
          <div className="form__error" role="alert">
            <p className="account-setup__error-text">{failure.text}</p>
            {failure.noSession && <NoSessionHint email={email.trim()} />}
          </div>
        )}
        <Button type="submit" className="form__submit" disabled={busy}>
          {busy ? 'Creating Account...' : 'Access Account'}
        </Button>
      </form>
    </>
  );
}

function SetupSuccess({ trialActive }: { trialActive: boolean }) {
  const navigate = useNavigate();
  const { productName } = usePublicConfig();

  useEffect(() => {
    const timer = setTimeout(() => navigate('/'), REDIRECT_DELAY_MS);
    return () => clearTimeout(timer);
  }, [navigate]);

  return (
    <section className="card auth-card account-setup account-setup--done" aria-labelledby="account-setup-title">
      {trialActive && <p className="trial-badge">Trial Active</p>}
      <h1 id="account-setup-title" className="page-title">
        Welcome to {productName}!
      </h1>
      <p className="account-setup__welcome" role="status">
        Your account is ready. We are taking you to {productName} in a few seconds.
      </p>
      <Button className="form__submit" onClick={() => navigate('/')}>
        Start Using {productName}
      </Button>
    </section>
  );
}

/** `/account-setup?success=true&email=..&session=..&session_id=..`: a password after checkout. */
export function AccountSetupPage() {
  const [params] = useSearchParams();
  const cameFromCheckout = params.get('success') === 'true';
  const queryEmail = params.get('email')?.trim() ?? '';
  const [state, setState] = useState<Phase>({ phase: 'checking' });

  useEffect(() => {
    if (!cameFromCheckout) return undefined;
    const controller = new AbortController();
    accountSetupApi
      .status(controller.signal)
      .then((status) => setState({ phase: 'setup', status }))
      .catch((cause) => {
        if (controller.signal.aborted) return;
        // No checkout for this browser: said at once, not after a password is typed. Without an
        // answer at all (offline, say) the form still works from the query's email, and submitting
        // brings the server's own explanation.
        const noSession = cause instanceof ApiError && cause.code === 'no_session';
        setState(noSession ? { phase: 'no-session' } : { phase: 'setup', status: null });
      });
    return () => controller.abort();
  }, [cameFromCheckout]);

  if (!cameFromCheckout) {
    return (
      <section className="card auth-card account-setup" aria-labelledby="account-setup-title">
        <h1 id="account-setup-title" className="page-title">
          Account Setup
        </h1>
        <p className="form__error" role="alert">
          {INVALID_ACCESS}
        </p>
        <p className="account-setup__actions">
          <ReturnHome />
        </p>
      </section>
    );
  }
  if (state.phase === 'success') return <SetupSuccess trialActive={state.trialActive} />;

  return (
    <section className="card auth-card account-setup" aria-labelledby="account-setup-title">
      <h1 id="account-setup-title" className="page-title">
        Choose a password
      </h1>
      {state.phase === 'checking' && (
        <p className="account-setup__checking" role="status">
          <span className="spinner" aria-hidden="true" /> Checking your subscription status...
        </p>
      )}
      {state.phase === 'no-session' && (
        <div className="form__error" role="alert">
          <p className="account-setup__error-text">We could not find your checkout in this browser.</p>
          <NoSessionHint email={queryEmail} />
        </div>
      )}
      {state.phase === 'setup' && (
        <SetupForm
          status={state.status}
          queryEmail={queryEmail}
          onDone={(trialActive) => setState({ phase: 'success', trialActive })}
        />
      )}
    </section>
  );
}
