import { useRef, type ReactNode } from 'react';
import { Link } from 'react-router';
import { Modal } from '../../components/Modal';
import { usePublicConfig } from '../../lib/public-config';
import { SignupForm } from './SignupForm';

type SignupModalProps = {
  onClose: () => void;
  /** What follows the new account (the landing page: its free trial checkout). */
  onSignedUp?: () => void;
  /** What the page says about that next step (busy, or why it did not happen). */
  nextStep?: ReactNode;
};

/**
 * The landing page's sign-up ('Save Favorites'): the account, then the free 7-day trial checkout
 * the page's blurb promises (nothing charged today; $20/month after the trial unless canceled).
 */
export function SignupModal({ onClose, onSignedUp, nextStep }: SignupModalProps) {
  const { assistantName } = usePublicConfig();
  const emailRef = useRef<HTMLInputElement>(null);

  return (
    <Modal title="Create your account" onClose={onClose} initialFocusRef={emailRef} className="signup-dialog">
      <p className="signup-dialog__intro">
        Save your favorite sites and get unlimited chat help from {assistantName}, your personal chat assistant.
      </p>
      {onSignedUp && (
        <p className="signup-dialog__terms">
          Next, start your free 7-day trial: nothing is charged today. After 7 days it is $20/month. Cancel anytime
          before then and you pay nothing.
        </p>
      )}
      <SignupForm emailRef={emailRef} idPrefix="signup-modal" onSignedUp={onSignedUp} />
      {nextStep}
      <p className="signup-dialog__login">
        Already have an account? <Link to="/login">Log in</Link>
      </p>
    </Modal>
  );
}
