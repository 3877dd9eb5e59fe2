import { Link } from 'react-router';
import { usePublicConfig } from '../../app/public-config';

/** The members page with the chat arrives in a later release; until then `/` says so kindly. */
export function MembersPlaceholder() {
  const { productName, assistantName } = usePublicConfig();

  return (
    <section className="card coming-soon" aria-labelledby="members-title">
      <h1 id="members-title" className="page-title">
        Welcome to {productName}
      </h1>
      <p className="coming-soon__text">
        Our members area - where you can chat with {assistantName}, your personal assistant, about any computer
        question - is coming soon.
      </p>
      <p className="coming-soon__text">In the meantime, pick the websites you use most and keep them one click away.</p>
      <p>
        <Link to="/landing" className="btn btn--primary">
          Choose your favorite sites
        </Link>
      </p>
    </section>
  );
}
