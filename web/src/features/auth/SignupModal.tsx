import { useRef } from 'react';
import { Link } from 'react-router';
import { Modal } from '../../components/Modal';
import { usePublicConfig } from '../../lib/public-config';
import { useStartTrial } from '../trial/useStartTrial';
import { SignupForm } from './SignupForm';

/**
 * The landing page's sign-up ('Save Favorites'): the account, then the free 7-day trial checkout
 * the page's blurb promises (nothing charged today; $20/month after the trial unless canceled).
 */
export function SignupModal({ onClose }: { onClose: () => void }) {
  const { assistantName } = usePublicConfig();
  const emailRef = useRef<HTMLInputElement>(null);
  const trial = useStartTrial('direct_signup');

  return (
    <Modal title="Create your account" onClose={onClose} initialFocusRef={emailRef} className="signup-dialog">
      <p className="signup-dialog__intro">
        Save your favorite sites and get unlimited chat help from {assistantName}, your personal chat assistant.
      </p>
      <p className="signup-dialog__terms">
        Next, start your free 7-day trial: nothing is charged today. After 7 days it is $20/month. Cancel anytime
        before then and you pay nothing.
      </p>
      <SignupForm emailRef={emailRef} idPrefix="signup-modal" onSignedUp={() => void trial.start()} />
      {trial.busy && (
        <p className="signup-dialog__status" role="status">
          Taking you to the secure checkout...
        </p>
      )}
      {trial.error && (
        <p className="form__error" role="alert">
          {trial.error}
        </p>
      )}
      <p className="signup-dialog__login">
        Already have an account? <Link to="/login">Log in</Link>
      </p>
    </Modal>
  );
}
