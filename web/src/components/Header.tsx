import { Link, useNavigate } from 'react-router';
import { usePublicConfig } from '../lib/public-config';
import { useSession } from '../lib/session';
import { HamburgerMenu } from './HamburgerMenu';

export function Header() {
  const { productName } = usePublicConfig();
  const { user, signOut } = useSession();
  const navigate = useNavigate();

  return (
    <header className="site-header">
      <div className="site-header__inner">
        <Link to="/" className="site-header__brand">
          <img src="/favicon.svg" alt="" width="36" height="36" className="site-header__logo" />
          <span>{productName}</span>
        </Link>
        <nav aria-label="Account" className="site-header__nav">
          {user ? (
            <>
              <span className="site-header__email" title={user.email}>
                {user.email}
              </span>
              <a
                href="/login"
                className="site-header__link"
                onClick={(event) => {
                  event.preventDefault();
                  void signOut().then(() => navigate('/login'));
                }}
              >
                Logout
              </a>
            </>
          ) : (
            // Nothing shows until the server has said who is signed in, so the links never flicker.
            user === null && (
              <>
                <Link to="/login" className="site-header__link">
                  Login
                </Link>
                {/* The members page opens the trial prompt for this parameter. */}
                <Link to="/?subscribe=true" className="site-header__link site-header__link--cta">
                  Subscribe
                </Link>
              </>
            )
          )}
        </nav>
        <HamburgerMenu />
      </div>
    </header>
  );
}
