import { Navigate, type RouteObject } from 'react-router';
import { AppLayout, type RouteHandle } from './AppLayout';
import { LandingPage } from '../features/landing/LandingPage';
import { ComingSoonPage } from '../features/coming-soon/ComingSoonPage';
import { MembersPage } from '../features/members/MembersPage';
import { LoginPage } from '../features/auth/LoginPage';
import { SignupPage } from '../features/auth/SignupPage';
import { AccountSetupPage } from '../features/account-setup/AccountSetupPage';
import { CheckoutSuccessPage } from '../features/checkout/CheckoutSuccessPage';
import { DemoCheckoutPage } from '../features/checkout/DemoCheckoutPage';
import { CheckoutDebugPage } from '../features/checkout-debug/CheckoutDebugPage';

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
      { path: '/', element: <MembersPage /> },
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
      {
        path: '/account-setup',
        caseSensitive: true,
        element: <AccountSetupPage />,
        handle: { title: 'Account Setup' } satisfies RouteHandle,
      },
      {
        path: '/checkout-success',
        caseSensitive: true,
        element: <CheckoutSuccessPage />,
        handle: { title: 'Checkout' } satisfies RouteHandle,
      },
      {
        path: '/checkout-debug',
        caseSensitive: true,
        element: <CheckoutDebugPage />,
        handle: { title: 'Checkout Debug' } satisfies RouteHandle,
      },
      {
        path: '/demo-checkout/:id',
        caseSensitive: true,
        element: <DemoCheckoutPage />,
        handle: { title: 'Demo Checkout' } satisfies RouteHandle,
      },
      { path: '*', element: <Navigate to="/" replace /> },
    ],
  },
];
