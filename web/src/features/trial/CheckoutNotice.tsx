import { Button } from '../../components/Button';
import { TrialCheckoutButton } from './TrialCheckoutButton';
import { trialButtonLabel } from './labels';

export type NoticeKind = 'canceled' | 'checkout-failed';

const NOTICES: Record<NoticeKind, { title: string; text: string }> = {
  canceled: {
    title: 'Checkout canceled',
    text: 'Your checkout was canceled and nothing was charged. You can start your trial whenever you are ready.',
  },
  'checkout-failed': {
    title: 'We could not open the checkout',
    text: 'Something went wrong while opening the checkout page. Nothing was charged.',
  },
};

/** Back from a checkout that did not happen (`?canceled=true`, `?success=demo`). */
export function CheckoutNotice({
  kind,
  signedIn,
  offerTrial,
  onDismiss,
}: {
  kind: NoticeKind;
  signedIn: boolean;
  offerTrial: boolean;
  onDismiss: () => void;
}) {
  const { title, text } = NOTICES[kind];
  return (
    <section className="checkout-notice" role="status" aria-labelledby="checkout-notice-title">
      <h2 id="checkout-notice-title" className="checkout-notice__title">
        {title}
      </h2>
      <p className="checkout-notice__text">{text}</p>
      <div className="checkout-notice__actions">
        {offerTrial && (
          <TrialCheckoutButton label={kind === 'checkout-failed' ? 'Try again' : trialButtonLabel(signedIn)} />
        )}
        <Button variant="secondary" onClick={onDismiss}>
          Dismiss
        </Button>
      </div>
    </section>
  );
}
