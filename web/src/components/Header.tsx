import { Link } from 'react-router';
import { usePublicConfig } from '../app/public-config';

export function Header() {
  const { productName } = usePublicConfig();

  return (
    <header className="site-header">
      <div className="site-header__inner">
        <Link to="/" className="site-header__brand">
          <img src="/favicon.svg" alt="" width="36" height="36" className="site-header__logo" />
          <span>{productName}</span>
        </Link>
        {/* Nobody can sign in yet, so the signed-out links are the only ones. */}
        <nav aria-label="Account" className="site-header__nav">
          <Link to="/login" className="site-header__link">
            Login
          </Link>
          <Link to="/landing" className="site-header__link site-header__link--cta">
            Subscribe
          </Link>
        </nav>
      </div>
    </header>
  );
}
