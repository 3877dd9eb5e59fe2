import { useState, type FormEvent, type RefObject } from 'react';
import { useNavigate } from 'react-router';
import { Button } from '../../components/Button';
import { Field } from '../../components/Field';
import { useSession } from '../../lib/session';
import { authApi } from '../../lib/auth';

type SignupFormProps = {
  emailRef?: RefObject<HTMLInputElement | null>;
  idPrefix: string;
  /** What follows a new account instead of /members (the landing page's free trial checkout). */
  onSignedUp?: () => void;
};

/** Email and password, 'Create Account' ('Creating account...' while busy); then /members. */
export function SignupForm({ emailRef, idPrefix, onSignedUp }: SignupFormProps) {
  const navigate = useNavigate();
  const { signedIn } = useSession();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [submitting, setSubmitting] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function handleSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (submitting) return;
    setSubmitting(true);
    setError(null);
    try {
      const { user } = await authApi.signup({ email: email.trim(), password });
      signedIn(user);
      if (onSignedUp) onSignedUp();
      else navigate('/members');
    } catch (cause) {
      const message = cause instanceof Error ? cause.message : String(cause);
      setError(`Failed to create an account: ${message}`);
      setSubmitting(false);
    }
  }

  return (
    <form className="form" onSubmit={handleSubmit} aria-busy={submitting}>
      <Field
        ref={emailRef}
        id={`${idPrefix}-email`}
        label="Email"
        name="email"
        type="email"
        autoComplete="email"
        required
        value={email}
        onChange={(event) => setEmail(event.target.value)}
      />
      <Field
        id={`${idPrefix}-password`}
        label="Password"
        name="password"
        type="password"
        autoComplete="new-password"
        required
        value={password}
        onChange={(event) => setPassword(event.target.value)}
      />
      {error && (
        <p className="form__error" role="alert">
          {error}
        </p>
      )}
      <Button type="submit" className="form__submit" disabled={submitting}>
        {submitting ? 'Creating account...' : 'Create Account'}
      </Button>
    </form>
  );
}
