import { Navigate, type RouteObject } from 'react-router';
import { AppLayout, type RouteHandle } from './AppLayout';
import { LandingPage } from './pages/LandingPage';
import { MembersPage } from './pages/MembersPage';
import { LoginPage } from '../features/auth/LoginPage';
import { SignupPage } from '../features/auth/SignupPage';
import { AccountSetupPage } from '../features/account-setup/AccountSetupPage';
import { CheckoutSuccessPage } from '../features/checkout/CheckoutSuccessPage';
import { DemoCheckoutPage } from '../features/checkout/DemoCheckoutPage';
import { CheckoutDebugPage } from '../features/checkout-debug/CheckoutDebugPage';
import { ChatFunnelPage } from '../features/funnels/ChatFunnelPage';
import { HelpFunnelPage } from '../features/funnels/HelpFunnelPage';

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
      {
        path: '/get-help',
        caseSensitive: true,
        element: <HelpFunnelPage key="help" />,
        handle: { title: 'Get Instant Help' } satisfies RouteHandle,
      },
      {
        path: '/funnel',
        caseSensitive: true,
        element: <HelpFunnelPage key="help" />,
        handle: { title: 'Get Instant Help' } satisfies RouteHandle,
      },
      // The chat funnel renders its own footer with the legal dialogs, so the app's is off there.
      {
        path: '/chat-help',
        caseSensitive: true,
        element: <ChatFunnelPage key="chat" funnel="chat" />,
        handle: { title: 'Chat With an Expert', hideFooter: true } satisfies RouteHandle,
      },
      {
        path: '/Chat-Help-2',
        caseSensitive: true,
        element: <ChatFunnelPage key="refundable" funnel="refundable" />,
        handle: { title: 'Chat With an Expert', hideFooter: true } satisfies RouteHandle,
      },
      {
        path: '/email-help',
        caseSensitive: true,
        element: <ChatFunnelPage key="email" funnel="chat" defaultKeyword="email" />,
        handle: { title: 'Email Help', hideFooter: true } satisfies RouteHandle,
      },
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
