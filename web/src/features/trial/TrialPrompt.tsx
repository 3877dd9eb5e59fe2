import { Link } from 'react-router';
import { Modal } from '../../components/Modal';
import { usePublicConfig } from '../../lib/public-config';
import { useSession } from '../../lib/session';
import { TrialCheckoutButton } from './TrialCheckoutButton';
import { trialButtonLabel } from './labels';

/** The upgrade prompt: opened by the trial buttons and by the header's Subscribe link. */
export function TrialPrompt({ onClose }: { onClose: () => void }) {
  const { assistantName } = usePublicConfig();
  const { user } = useSession();
  const signedIn = Boolean(user);

  return (
    <Modal title="Get Unlimited AI Access!" onClose={onClose} className="trial-prompt">
      <p className="trial-prompt__lead">Navigate the web with your own personal AI assistant.</p>
      <ul className="trial-prompt__points">
        <li>Unlimited chat help from {assistantName}, any time of day</li>
        <li>Step-by-step answers in plain language</li>
        <li>After 7 days, $20/month. Cancel anytime.</li>
      </ul>
      <TrialCheckoutButton label={trialButtonLabel(signedIn)} className="trial-prompt__checkout" />
      {!signedIn && (
        <p className="trial-prompt__login">
          Already a member?{' '}
          <Link to="/login" className="trial-prompt__login-link">
            Login to Continue
          </Link>
        </p>
      )}
    </Modal>
  );
}
