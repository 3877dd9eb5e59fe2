import { Link } from 'react-router';
import { usePublicConfig } from '../../lib/public-config';
import { SignupForm } from './SignupForm';

export function SignupPage() {
  const { productName } = usePublicConfig();
  return (
    <section className="card auth-card" aria-labelledby="signup-title">
      <h1 id="signup-title" className="page-title">
        Create Your Account
      </h1>
      <p className="auth-card__lead">One account for your shortcuts and your {productName} chats.</p>
      <SignupForm idPrefix="signup" />
      <p className="auth-card__switch">
        Already have an account? <Link to="/login">Log in</Link>
      </p>
    </section>
  );
}
