// For the tests that render the whole app: the router loads a page's code when its route first
// matches (routes.tsx), so a test waits for that before it looks at the page.
import { StrictMode } from 'react';
import { act, render } from '@testing-library/react';
import { createMemoryRouter } from 'react-router';
import { App } from './App';
import { routes } from './routes';

type MemoryRouter = ReturnType<typeof createMemoryRouter>;

/** Resolves once the router has loaded the code of the page its location matches. */
async function pageLoaded(router: MemoryRouter): Promise<void> {
  if (!router.state.initialized) {
    await new Promise<void>((resolve) => {
      const unsubscribe = router.subscribe((state) => {
        if (!state.initialized) return;
        unsubscribe();
        resolve();
      });
    });
  }
  // Lets React render what the router now has.
  await act(async () => {});
}

/** Renders the app at `path` (in StrictMode when `strict`), its page loaded. */
export async function renderApp(path: string, { strict = false } = {}): Promise<MemoryRouter> {
  const router = createMemoryRouter(routes, { initialEntries: [path] });
  const app = <App router={router} />;
  render(strict ? <StrictMode>{app}</StrictMode> : app);
  await pageLoaded(router);
  return router;
}
