// What the admin pages share: the card a section is drawn in, with its head, a read that failed
// with its retry, and the page an admin page is for anyone else (its API answers 404).
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { Button } from '../../components/Button';

export const NOT_AVAILABLE = 'This page is not available.';

export function Section({
  id,
  title,
  actions,
  children,
  className,
}: {
  id: string;
  title: ReactNode;
  actions?: ReactNode;
  children: ReactNode;
  className?: string;
}) {
  return (
    <section className={['card admin-section', className].filter(Boolean).join(' ')} aria-labelledby={id}>
      <div className="admin-section__head">
        <h2 id={id} className="admin-section__title">
          {title}
        </h2>
        {actions && <div className="admin-section__actions">{actions}</div>}
      </div>
      {children}
    </section>
  );
}

/** An admin page, titled `title`, for someone who is not an admin. */
export function Unavailable({ title, titleId }: { title: string; titleId: string }) {
  return (
    <section className="card admin-unavailable" aria-labelledby={titleId}>
      <h1 id={titleId} className="page-title">
        {title}
      </h1>
      <p>{NOT_AVAILABLE}</p>
      <p>
        <Link to="/" className="btn btn--primary">
          Return to Home
        </Link>
      </p>
    </section>
  );
}

/** A read that failed: its error, announced, and "Try again". */
export function LoadFailed({ error, onRetry }: { error: string; onRetry: () => void }) {
  return (
    <div className="admin-failed">
      <p className="form__error" role="alert">
        {error}
      </p>
      <Button variant="secondary" onClick={onRetry}>
        Try again
      </Button>
    </div>
  );
}
