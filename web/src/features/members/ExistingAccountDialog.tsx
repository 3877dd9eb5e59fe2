import { Link } from 'react-router';
import { Modal } from '../../components/Modal';

/** A checkout for an email that already has an account: that account is where the trial went. */
export function ExistingAccountDialog({ email, onClose }: { email: string; onClose: () => void }) {
  return (
    <Modal title="Welcome Back!" onClose={onClose} className="members-dialog">
      <p className="members-dialog__text">
        You already have an account with <strong className="members-dialog__email">{email}</strong>. Please log in
        to continue.
      </p>
      <Link to={`/login?${new URLSearchParams({ email })}`} className="btn btn--primary form__submit">
        Login to Your Account
      </Link>
    </Modal>
  );
}
