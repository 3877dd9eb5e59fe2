import { useEffect, useRef } from 'react';
import { Outlet, ScrollRestoration, useLocation, useMatches, useNavigate, type Location } from 'react-router';
import { readCampaignParams, rememberCampaignParams } from '../lib/campaign-params';
import { recordPageView } from '../lib/analytics';
import { Header } from '../components/Header';
import { previewId } from '../features/funnels/preview';
import { Footer } from '../components/Footer';
import { usePublicConfig } from '../lib/public-config';
import { useSession } from '../lib/session';

export type RouteHandle = { title?: string; hideFooter?: boolean };

function currentHandle(matches: ReturnType<typeof useMatches>): RouteHandle {
  const deepest = matches[matches.length - 1];
  return (deepest?.handle as RouteHandle | undefined) ?? {};
}

// Every full page load gets the location key "default", so keying by it alone would carry one
// page's scroll position over to another page loaded directly; those loads are keyed by path.
function scrollKey(location: Location): string {
  return location.key === 'default' ? location.pathname : location.key;
}

export function AppLayout() {
  const { productName } = usePublicConfig();
  const handle = currentHandle(useMatches());
  const { pathname, search } = useLocation();
  const { user } = useSession();
  const navigate = useNavigate();
  // The page the browser loaded, which the server counted as its page view.
  const viewed = useRef(pathname);

  // An ad may lead to any page: its campaign is kept as the visitor's first touch (the spec's
  // utm_params), which every checkout then carries to the account. Not an operator's preview of a
  // draft flow (?preview=): its keyword is a test, not this browser's campaign.
  useEffect(() => {
    if (previewId(search)) return;
    rememberCampaignParams(readCampaignParams(search));
  }, [search]);

  // Each page the app moves to afterwards is a page view of its own (a change of the query alone
  // is the same page).
  useEffect(() => {
    if (viewed.current === pathname) return;
    viewed.current = pathname;
    recordPageView(pathname);
  }, [pathname]);

  // A mailed link proved the address and took the account over: the server answers this session
  // nothing else until it has chosen a new password, so every page leads there.
  useEffect(() => {
    if (!user?.mustChoosePassword || pathname === '/account-setup') return;
    navigate(`/account-setup?${new URLSearchParams({ success: 'true', email: user.email })}`, { replace: true });
  }, [user, pathname, navigate]);

  useEffect(() => {
    document.title = handle.title ? `${handle.title} | ${productName}` : productName;
  }, [handle.title, productName]);

  return (
    <div className="app">
      <a href="#main" className="skip-link">
        Skip to main content
      </a>
      <Header />
      <main id="main" className="app__main" tabIndex={-1}>
        <Outlet />
      </main>
      {!handle.hideFooter && <Footer />}
      <ScrollRestoration getKey={scrollKey} />
    </div>
  );
}
