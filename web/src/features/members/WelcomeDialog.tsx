import { Button } from '../../components/Button';
import { Modal } from '../../components/Modal';
import { usePublicConfig } from '../../lib/public-config';

/** After a checkout's one-time sign-in. */
export function WelcomeDialog({ onClose }: { onClose: () => void }) {
  const { productName, assistantName } = usePublicConfig();
  return (
    <Modal title={`Welcome to ${productName}!`} onClose={onClose} className="members-dialog">
      <p className="members-dialog__text">
        You are signed in. {assistantName}, your personal assistant, is here to help with any computer or online
        question.
      </p>
      <Button className="form__submit" onClick={onClose}>
        Start Using {productName}
      </Button>
    </Modal>
  );
}
