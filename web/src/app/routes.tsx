import { Navigate, type RouteObject } from 'react-router';
import { AppLayout, type RouteHandle } from './AppLayout';
import { LandingPage } from '../features/landing/LandingPage';
import { ComingSoonPage } from '../features/coming-soon/ComingSoonPage';
import { MembersPlaceholder } from '../features/members/MembersPlaceholder';
import { LoginPage } from '../features/auth/LoginPage';
import { SignupPage } from '../features/auth/SignupPage';

function comingSoon(path: string, title: string, handle: RouteHandle = {}): RouteObject {
  return {
    path,
    caseSensitive: true,
    element: <ComingSoonPage title={title} />,
    handle: { title, ...handle } satisfies RouteHandle,
  };
}

// Every row of the spec's route table; the server serves index.html for exactly these paths.
export const routes: RouteObject[] = [
  {
    element: <AppLayout />,
    children: [
      { path: '/', element: <MembersPlaceholder /> },
      {
        path: '/landing',
        caseSensitive: true,
        element: <LandingPage />,
        handle: { title: 'Your Favorite Sites' } satisfies RouteHandle,
      },
      comingSoon('/get-help', 'Get Instant Help'),
      comingSoon('/funnel', 'Get Instant Help'),
      // The spec keeps the footer off this one funnel screen.
      comingSoon('/chat-help', 'Chat With an Expert', { hideFooter: true }),
      comingSoon('/Chat-Help-2', 'Chat With an Expert'),
      comingSoon('/email-help', 'Email Help'),
      {
        path: '/login',
        caseSensitive: true,
        element: <LoginPage />,
        handle: { title: 'Sign in' } satisfies RouteHandle,
      },
      {
        path: '/signup',
        caseSensitive: true,
        element: <SignupPage />,
        handle: { title: 'Create Your Account' } satisfies RouteHandle,
      },
      // Where sign-up and sign-in lead: the members page itself.
      { path: '/members', caseSensitive: true, element: <Navigate to="/" replace /> },
      comingSoon('/account-setup', 'Account Setup'),
      comingSoon('/checkout-success', 'Checkout'),
      comingSoon('/checkout-debug', 'Checkout Debug'),
      comingSoon('/demo-checkout/:id', 'Demo Checkout'),
      { path: '*', element: <Navigate to="/" replace /> },
    ],
  },
];
