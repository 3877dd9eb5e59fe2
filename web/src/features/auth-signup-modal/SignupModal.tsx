import { useRef, useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { Modal } from '../../components/Modal';
import { Button } from '../../components/Button';
import { usePublicConfig } from '../../app/public-config';
import { signup } from './api';

export function SignupModal({ onClose }: { onClose: () => void }) {
  const { assistantName } = usePublicConfig();
  const navigate = useNavigate();
  const emailRef = useRef<HTMLInputElement>(null);
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
      await signup({ email: email.trim(), password });
      navigate('/members');
    } catch (cause) {
      const message = cause instanceof Error ? cause.message : String(cause);
      setError(`Failed to create an account: ${message}`);
      setSubmitting(false);
    }
  }

  return (
    <Modal title="Create your account" onClose={onClose} initialFocusRef={emailRef} className="signup-dialog">
      <p className="signup-dialog__intro">
        Save your favorite sites and get unlimited chat help from {assistantName}, your personal chat assistant.
      </p>
      <form className="form" onSubmit={handleSubmit} aria-busy={submitting}>
        <div className="form__field">
          <label htmlFor="signup-email">Email</label>
          <input
            ref={emailRef}
            id="signup-email"
            name="email"
            type="email"
            autoComplete="email"
            required
            value={email}
            onChange={(event) => setEmail(event.target.value)}
          />
        </div>
        <div className="form__field">
          <label htmlFor="signup-password">Password</label>
          <input
            id="signup-password"
            name="password"
            type="password"
            autoComplete="new-password"
            required
            value={password}
            onChange={(event) => setPassword(event.target.value)}
          />
        </div>
        {error && (
          <p className="form__error" role="alert">
            {error}
          </p>
        )}
        <Button type="submit" className="form__submit" disabled={submitting}>
          {submitting ? 'Creating account...' : 'Create Account'}
        </Button>
      </form>
      <p className="signup-dialog__login">
        Already have an account? <Link to="/login">Log in</Link>
      </p>
    </Modal>
  );
}
