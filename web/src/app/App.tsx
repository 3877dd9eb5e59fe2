import { RouterProvider, type createBrowserRouter } from 'react-router';
import { PublicConfigProvider } from '../lib/public-config';
import { SessionProvider } from '../lib/session';

type Router = ReturnType<typeof createBrowserRouter>;

/** Providers around the router; tests pass a memory router built from the same routes. */
export function App({ router }: { router: Router }) {
  return (
    <PublicConfigProvider>
      <SessionProvider>
        <RouterProvider router={router} />
      </SessionProvider>
    </PublicConfigProvider>
  );
}
