import { Link } from 'react-router';
import { SignInForm } from '../../components/SignInForm';

/** The members page's compact sign-in for visitors; they stay on the page once signed in (the
 * page then asks the server for the access facts the sign-in answer lacks). */
export function SignInPanel() {
  return (
    <section className="card members-signin" aria-labelledby="members-signin-title">
      <h2 id="members-signin-title" className="members__card-title">
        Already a member? Sign in
      </h2>
      <SignInForm idPrefix="members-signin" aria-label="Sign in" />
      <p className="members-signin__links">
        <Link to="/login">Forgot password?</Link>
        <Link to="/signup">Need an account? Sign up</Link>
      </p>
    </section>
  );
}
