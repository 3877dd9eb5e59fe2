import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { Button } from '../../components/Button';
import { Field } from '../../components/Field';
import { useSession } from '../../lib/session';
import { ApiError } from '../../lib/api';
import { authApi } from '../../lib/auth';

/** The server's own texts for these are the spec's sign-in rows; anything else is 'Failed to log in'. */
function signInError(cause: unknown): string {
  if (cause instanceof ApiError && ['invalid_credentials', 'too_many_requests'].includes(cause.code)) {
    return cause.message;
  }
  const message = cause instanceof Error ? cause.message : String(cause);
  return `Failed to log in: ${message}`;
}

/** The members page's compact sign-in for visitors; they stay on the page once signed in. */
export function SignInPanel() {
  const { signedIn } = useSession();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function handleSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(null);
    try {
      const { user } = await authApi.login({ email: email.trim(), password });
      // The members page then asks the server for the access facts this answer lacks.
      signedIn(user);
    } catch (cause) {
      setError(signInError(cause));
      setBusy(false);
    }
  }

  return (
    <section className="card members-signin" aria-labelledby="members-signin-title">
      <h2 id="members-signin-title" className="members__card-title">
        Already a member? Sign in
      </h2>
      <form className="form" onSubmit={handleSubmit} aria-label="Sign in" aria-busy={busy}>
        <Field
          id="members-signin-email"
          label="Email"
          type="email"
          autoComplete="email"
          required
          value={email}
          onChange={(event) => setEmail(event.target.value)}
        />
        <Field
          id="members-signin-password"
          label="Password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onChange={(event) => setPassword(event.target.value)}
        />
        {error && (
          <p className="form__error" role="alert">
            {error}
          </p>
        )}
        <Button type="submit" className="form__submit" disabled={busy}>
          {busy ? 'Signing in...' : 'Sign in'}
        </Button>
      </form>
      <p className="members-signin__links">
        <Link to="/login">Forgot password?</Link>
        <Link to="/signup">Need an account? Sign up</Link>
      </p>
    </section>
  );
}
