import type { ReactElement } from 'react';
import { Navigate, type RouteObject } from 'react-router';
import { AppLayout, type RouteHandle } from './AppLayout';

/**
 * Each page is its own chunk, loaded by the router when its route matches: a first visit loads
 * the shared code and that page only. The router renders nothing before the page's code is in,
 * and keeps the current page on screen while the next one's loads, so no placeholder ever
 * appears and moves the layout (a React.lazy page would need a Suspense fallback that does).
 */
function page(load: () => Promise<ReactElement>): RouteObject['lazy'] {
  return async () => ({ element: await load() });
}

/** What shows while a first visit's page loads: nothing, rather than a layout without its page. */
function NothingYet() {
  return null;
}

const membersPage = page(async () => {
  const { MembersPage } = await import('./pages/MembersPage');
  return <MembersPage />;
});
const helpFunnelPage = page(async () => {
  const { HelpFunnelPage } = await import('../features/funnels/HelpFunnelPage');
  return <HelpFunnelPage key="help" />;
});
const chatFunnelModule = () => import('../features/funnels/ChatFunnelPage');

// Every row of the spec's route table; the server serves index.html for exactly these paths.
export const routes: RouteObject[] = [
  {
    element: <AppLayout />,
    HydrateFallback: NothingYet,
    children: [
      { path: '/', lazy: membersPage },
      {
        path: '/landing',
        caseSensitive: true,
        lazy: page(async () => {
          const { LandingPage } = await import('./pages/LandingPage');
          return <LandingPage />;
        }),
        handle: { title: 'Your Favorite Sites' } satisfies RouteHandle,
      },
      {
        path: '/get-help',
        caseSensitive: true,
        lazy: helpFunnelPage,
        handle: { title: 'Get Instant Help' } satisfies RouteHandle,
      },
      {
        path: '/funnel',
        caseSensitive: true,
        lazy: helpFunnelPage,
        handle: { title: 'Get Instant Help' } satisfies RouteHandle,
      },
      // The chat funnel renders its own footer with the legal dialogs, so the app's is off there.
      {
        path: '/chat-help',
        caseSensitive: true,
        lazy: page(async () => {
          const { ChatFunnelPage } = await chatFunnelModule();
          return <ChatFunnelPage key="chat" funnel="chat" />;
        }),
        handle: { title: 'Chat With an Expert', hideFooter: true } satisfies RouteHandle,
      },
      {
        path: '/Chat-Help-2',
        caseSensitive: true,
        lazy: page(async () => {
          const { ChatFunnelPage } = await chatFunnelModule();
          return <ChatFunnelPage key="refundable" funnel="refundable" />;
        }),
        handle: { title: 'Chat With an Expert', hideFooter: true } satisfies RouteHandle,
      },
      {
        path: '/email-help',
        caseSensitive: true,
        lazy: page(async () => {
          const { ChatFunnelPage } = await chatFunnelModule();
          return <ChatFunnelPage key="email" funnel="chat" defaultKeyword="email" />;
        }),
        handle: { title: 'Email Help', hideFooter: true } satisfies RouteHandle,
      },
      {
        path: '/login',
        caseSensitive: true,
        lazy: page(async () => {
          const { LoginPage } = await import('../features/auth/LoginPage');
          return <LoginPage />;
        }),
        handle: { title: 'Sign in' } satisfies RouteHandle,
      },
      {
        path: '/signup',
        caseSensitive: true,
        lazy: page(async () => {
          const { SignupPage } = await import('../features/auth/SignupPage');
          return <SignupPage />;
        }),
        handle: { title: 'Create Your Account' } satisfies RouteHandle,
      },
      // Where sign-up and sign-in lead: the members page itself.
      { path: '/members', caseSensitive: true, element: <Navigate to="/" replace /> },
      {
        path: '/account-setup',
        caseSensitive: true,
        lazy: page(async () => {
          const { AccountSetupPage } = await import('../features/account-setup/AccountSetupPage');
          return <AccountSetupPage />;
        }),
        handle: { title: 'Account Setup' } satisfies RouteHandle,
      },
      {
        path: '/checkout-success',
        caseSensitive: true,
        lazy: page(async () => {
          const { CheckoutSuccessPage } = await import('../features/checkout/CheckoutSuccessPage');
          return <CheckoutSuccessPage />;
        }),
        handle: { title: 'Checkout' } satisfies RouteHandle,
      },
      {
        path: '/admin',
        caseSensitive: true,
        lazy: page(async () => {
          const { AdminDashboardPage } = await import('../features/admin/AdminDashboardPage');
          return <AdminDashboardPage />;
        }),
        handle: { title: 'Dashboard' } satisfies RouteHandle,
      },
      {
        path: '/admin/flows',
        caseSensitive: true,
        lazy: page(async () => {
          const { FlowsPage } = await import('../features/admin/flows/FlowsPage');
          return <FlowsPage />;
        }),
        handle: { title: 'Flows' } satisfies RouteHandle,
      },
      {
        path: '/admin/experiments',
        caseSensitive: true,
        lazy: page(async () => {
          const { ExperimentsPage } = await import('../features/admin/experiments/ExperimentsPage');
          return <ExperimentsPage />;
        }),
        handle: { title: 'Experiments' } satisfies RouteHandle,
      },
      {
        path: '/admin/checkout-debug',
        caseSensitive: true,
        lazy: page(async () => {
          const { CheckoutDebugPage } = await import('../features/checkout-debug/CheckoutDebugPage');
          return <CheckoutDebugPage />;
        }),
        handle: { title: 'Checkout Debug' } satisfies RouteHandle,
      },
      // The checkout debug page's first address: it lives under the dashboard now.
      { path: '/checkout-debug', caseSensitive: true, element: <Navigate to="/admin/checkout-debug" replace /> },
      {
        path: '/demo-checkout/:id',
        caseSensitive: true,
        lazy: page(async () => {
          const { DemoCheckoutPage } = await import('../features/checkout/DemoCheckoutPage');
          return <DemoCheckoutPage />;
        }),
        handle: { title: 'Demo Checkout' } satisfies RouteHandle,
      },
      { path: '*', element: <Navigate to="/" replace /> },
    ],
  },
];
