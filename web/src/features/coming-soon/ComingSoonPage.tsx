import { Link } from 'react-router';

/** Stands in for a screen that a later release fills in. */
export function ComingSoonPage({ title }: { title: string }) {
  return (
    <section className="card coming-soon" aria-labelledby="coming-soon-title">
      <h1 id="coming-soon-title" className="page-title">
        {title}
      </h1>
      <p className="coming-soon__text">This page is coming soon. Thank you for your patience!</p>
      <p>
        <Link to="/landing" className="btn btn--primary">
          Choose your favorite sites
        </Link>
      </p>
    </section>
  );
}
