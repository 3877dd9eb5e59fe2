import { Button } from '../../components/Button';
import { useStartTrial } from './useStartTrial';

/** A button that goes straight to the trial checkout, with the failure text above it. */
export function TrialCheckoutButton({ label, className }: { label: string; className?: string }) {
  const { start, busy, error } = useStartTrial();
  return (
    <div className={['trial-checkout', className].filter(Boolean).join(' ')}>
      {error && (
        <p className="form__error" role="alert">
          {error}
        </p>
      )}
      <Button className="trial-checkout__button" disabled={busy} aria-busy={busy} onClick={() => void start()}>
        {busy ? 'Redirecting to checkout...' : label}
      </Button>
    </div>
  );
}
