import { useRef } from 'react';
import { Link } from 'react-router';
import { Modal } from '../../components/Modal';
import { usePublicConfig } from '../../lib/public-config';
import { SignupForm } from './SignupForm';

export function SignupModal({ onClose }: { onClose: () => void }) {
  const { assistantName } = usePublicConfig();
  const emailRef = useRef<HTMLInputElement>(null);

  return (
    <Modal title="Create your account" onClose={onClose} initialFocusRef={emailRef} className="signup-dialog">
      <p className="signup-dialog__intro">
        Save your favorite sites and get unlimited chat help from {assistantName}, your personal chat assistant.
      </p>
      <SignupForm emailRef={emailRef} idPrefix="signup-modal" />
      <p className="signup-dialog__login">
        Already have an account? <Link to="/login">Log in</Link>
      </p>
    </Modal>
  );
}
