import { useState, type FormEvent } from 'react';
import { Button } from './Button';
import { Field } from './Field';
import { ApiError } from '../lib/api';
import { authApi, type User } from '../lib/auth';
import { useSession } from '../lib/session';

/** The server's own texts for these are the spec's sign-in rows; anything else is 'Failed to log in'. */
function signInError(cause: unknown): string {
  if (cause instanceof ApiError && ['invalid_credentials', 'too_many_requests'].includes(cause.code)) {
    return cause.message;
  }
  const message = cause instanceof Error ? cause.message : String(cause);
  return `Failed to log in: ${message}`;
}

type SignInFormProps = {
  /** Prefix of the fields' ids (`${idPrefix}-email`, `${idPrefix}-password`). */
  idPrefix: string;
  'aria-label'?: string;
  /** After the session knows the user: where the page goes next, if anywhere. */
  onSignedIn?: (user: User) => void;
  /** The email as typed, for a form beside this one (the reset link's). */
  onEmailChange?: (email: string) => void;
  /** An address the page already knows (the 'Welcome Back!' dialog's). */
  initialEmail?: string;
};

/** Email, password and 'Sign in': the sign-in page's form and the members page's panel. */
export function SignInForm({
  idPrefix,
  'aria-label': label,
  onSignedIn,
  onEmailChange,
  initialEmail = '',
}: SignInFormProps) {
  const { signedIn } = useSession();
  const [email, setEmail] = useState(initialEmail);
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
      signedIn(user);
      onSignedIn?.(user);
    } catch (cause) {
      setError(signInError(cause));
      setBusy(false);
    }
  }

  return (
    <form className="form" onSubmit={handleSubmit} aria-label={label} aria-busy={busy}>
      <Field
        id={`${idPrefix}-email`}
        label="Email"
        type="email"
        autoComplete="email"
        required
        value={email}
        onChange={(event) => {
          setEmail(event.target.value);
          onEmailChange?.(event.target.value);
        }}
      />
      <Field
        id={`${idPrefix}-password`}
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
  );
}
