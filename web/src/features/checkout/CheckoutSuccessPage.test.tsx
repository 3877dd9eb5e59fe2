import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { vi } from 'vitest';
import { mockApi } from '../../test/fetch-mock';
import { SessionProvider, useSession } from '../../lib/session';
import { CheckoutSuccessPage } from './CheckoutSuccessPage';

/** The members page as far as these tests care: who is signed in, and what the address said. */
function Home() {
  const { user } = useSession();
  return (
    <>
      <h1>Home</h1>
      <p data-testid="member">{user?.access?.trialActive ? `${user.email} has a trial` : ''}</p>
    </>
  );
}

const PAID = {
  next: 'setup',
  email: 'ann@example.com',
  sessionId: 's1',
  paymentSessionId: 'cs_1',
  hasPassword: false,
  trialActive: true,
  trialEndDate: '2030-01-08T00:00:00Z',
};

function renderSuccess(path: string) {
  const router = createMemoryRouter(
    [
      { path: '/checkout-success', element: <CheckoutSuccessPage /> },
      { path: '/account-setup', element: <h1>Account setup</h1> },
      { path: '/', element: <Home /> },
    ],
    { initialEntries: [path] },
  );
  render(
    <SessionProvider>
      <RouterProvider router={router} />
    </SessionProvider>,
  );
  return router;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('CheckoutSuccessPage', () => {
  it('processes the checkout and goes on to account setup with the exact parameters', async () => {
    let answer: (reply: { body: unknown }) => void = () => {};
    const fetchMock = mockApi({ 'GET /api/checkout-success': () => new Promise((resolve) => (answer = resolve)) });
    const router = renderSuccess('/checkout-success?session_id=cs_1&session=s1');

    expect(screen.getByRole('heading', { level: 1, name: 'Processing your subscription...' })).toBeTruthy();
    await waitFor(() =>
      expect(fetchMock.mock.calls.map(([url]) => url)).toContain('/api/checkout-success?session_id=cs_1&session=s1'),
    );

    answer({ body: PAID });
    await waitFor(() => expect(router.state.location.pathname).toBe('/account-setup'));
    expect(router.state.location.search).toBe('?success=true&session=s1&session_id=cs_1&email=ann%40example.com');
    expect(Object.fromEntries(new URLSearchParams(router.state.location.search))).toEqual({
      success: 'true',
      session: 's1',
      session_id: 'cs_1',
      email: 'ann@example.com',
    });
    // Replaced, so Back does not process the checkout again.
    expect(router.state.historyAction).toBe('REPLACE');
  });

  it('takes a buyer who is signed in to that account straight to the members page, with the access', async () => {
    let paid = false;
    const member = (trialActive: boolean) => ({
      user: {
        id: 'u1',
        email: 'ann@example.com',
        access: { hasAccess: trialActive, trialActive, hasActiveSubscription: trialActive, trialEndDate: null },
      },
    });
    mockApi({
      'GET /api/auth/me': () => Promise.resolve({ body: member(paid) }),
      'GET /api/checkout-success': () => {
        paid = true;
        return Promise.resolve({ body: { ...PAID, next: 'members', hasPassword: true } });
      },
    });
    const router = renderSuccess('/checkout-success?session_id=cs_1&session=s1');
    await waitFor(() => expect(router.state.location.pathname).toBe('/'));
    expect(router.state.location.search).toBe('');
    expect(router.state.location.state).toEqual({ welcome: true });
    expect(screen.getByTestId('member').textContent).toBe('ann@example.com has a trial');
  });

  it("sends a signed-out buyer whose email has an account to 'Welcome Back!'", async () => {
    mockApi({ 'GET /api/checkout-success': { body: { ...PAID, next: 'sign-in', hasPassword: true } } });
    const router = renderSuccess('/checkout-success?session_id=cs_1&session=s1');
    await waitFor(() => expect(router.state.location.pathname).toBe('/'));
    expect(router.state.location.search).toBe('?existing=true&email=ann%40example.com');
  });

  it('accepts the session parameter alone', async () => {
    const fetchMock = mockApi({ 'GET /api/checkout-success': { body: PAID } });
    const router = renderSuccess('/checkout-success?session=s1');
    await waitFor(() => expect(router.state.location.pathname).toBe('/account-setup'));
    expect(fetchMock.mock.calls.map(([url]) => url)).toContain('/api/checkout-success?session=s1');
  });

  it('needs a session parameter, and calls nothing without one', () => {
    const fetchMock = mockApi();
    renderSuccess('/checkout-success?foo=bar');
    expect(screen.getByRole('heading', { level: 1, name: 'Something went wrong' })).toBeTruthy();
    expect(screen.getByRole('alert').textContent).toBe('Missing required session parameters');
    expect(fetchMock.mock.calls.some(([url]) => String(url).startsWith('/api/checkout-success'))).toBe(false);
  });

  it("shows the server's message and returns home", async () => {
    mockApi({
      'GET /api/checkout-success': {
        status: 402,
        body: { error: 'not_paid', message: 'Payment has not been completed for this checkout.' },
      },
    });
    const router = renderSuccess('/checkout-success?session_id=cs_1');
    expect((await screen.findByRole('alert')).textContent).toBe('Payment has not been completed for this checkout.');
    expect(screen.getByRole('heading', { level: 1, name: 'Something went wrong' })).toBeTruthy();

    fireEvent.click(screen.getByRole('button', { name: 'Return to Home' }));
    await waitFor(() => expect(router.state.location.pathname).toBe('/'));
  });

  it('says Error processing checkout success when the server answers without a message', async () => {
    mockApi({ 'GET /api/checkout-success': { status: 502, body: {} } });
    renderSuccess('/checkout-success?session_id=cs_1');
    expect((await screen.findByRole('alert')).textContent).toBe('Error processing checkout success');
  });

  it('uses the general fallback when the network fails', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => Promise.reject(new TypeError('Failed to fetch'))));
    renderSuccess('/checkout-success?session_id=cs_1');
    expect((await screen.findByRole('alert')).textContent).toBe('An error occurred while processing your checkout.');
  });

  it('waits 15 seconds for the server, not the usual 8', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const fetchMock = vi.fn<typeof fetch>(
      (_input: RequestInfo | URL, init?: RequestInit) =>
        new Promise<Response>((_resolve, reject) => {
          init?.signal?.addEventListener('abort', () => reject(new DOMException('Aborted', 'AbortError')));
        }),
    );
    vi.stubGlobal('fetch', fetchMock);
    renderSuccess('/checkout-success?session_id=cs_1');

    await act(() => vi.advanceTimersByTimeAsync(14_999));
    expect(screen.getByRole('heading', { level: 1, name: 'Processing your subscription...' })).toBeTruthy();
    expect(screen.queryByRole('alert')).toBeNull();
    expect(fetchMock.mock.calls.filter(([url]) => String(url).startsWith('/api/checkout-success'))).toHaveLength(1);

    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(screen.getByRole('alert').textContent).toBe('An error occurred while processing your checkout.');
  });
});
