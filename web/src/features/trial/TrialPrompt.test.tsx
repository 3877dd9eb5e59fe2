import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { vi } from 'vitest';
import { SessionProvider } from '../../lib/session';
import { mockApi } from '../../test/fetch-mock';
import { browserLocation } from '../../lib/browser';
import { TrialPrompt } from './TrialPrompt';

const MEMBER = {
  id: 'u1',
  email: 'ann@example.com',
  hasPassword: true,
  access: { hasAccess: false, trialActive: false, hasActiveSubscription: false, trialEndDate: null },
  pendingSetup: null,
};
const STARTED = { sessionId: 'cs_1', trackingSessionId: 's1', url: 'https://checkout.example/pay/cs_1' };

function renderPrompt() {
  const onClose = vi.fn<() => void>();
  const router = createMemoryRouter(
    [
      { path: '/', element: <TrialPrompt onClose={onClose} /> },
      { path: '/login', element: <h1>Sign in</h1> },
    ],
    { initialEntries: ['/'] },
  );
  render(
    <SessionProvider>
      <RouterProvider router={router} />
    </SessionProvider>,
  );
  return { router, onClose };
}

function watchRedirects() {
  return vi.spyOn(browserLocation, 'assign').mockImplementation(() => {});
}

afterEach(() => {
  vi.useRealTimers();
});

describe('TrialPrompt', () => {
  it('offers a visitor the trial and a way to log in', async () => {
    mockApi();
    const { router } = renderPrompt();
    const dialog = screen.getByRole('dialog', { name: 'Get Unlimited AI Access!' });
    expect(within(dialog).getByText('Navigate the web with your own personal AI assistant.')).toBeTruthy();
    expect(await within(dialog).findByRole('button', { name: 'Start Your Trial for $1' })).toBeTruthy();

    const login = within(dialog).getByRole('link', { name: 'Login to Continue' });
    expect(login.getAttribute('href')).toBe('/login');
    fireEvent.click(login);
    await waitFor(() => expect(router.state.location.pathname).toBe('/login'));
  });

  it('offers a member the 7-day trial without the login link', async () => {
    mockApi({ 'GET /api/auth/me': { body: { user: MEMBER } } });
    renderPrompt();
    expect(await screen.findByRole('button', { name: 'Start Your 7-Day Trial for $1' })).toBeTruthy();
    expect(screen.queryByRole('link', { name: 'Login to Continue' })).toBeNull();
  });

  it("carries the visitor's first campaign touch to the checkout", async () => {
    watchRedirects();
    window.localStorage.setItem(
      'utm_params',
      JSON.stringify({ utm_source: 'google', keyword: 'email help', campaignid: '777', first_visit_timestamp: 1 }),
    );
    const fetchMock = mockApi({
      'GET /api/auth/me': { body: { user: MEMBER } },
      'POST /api/create-checkout.js': { body: { sessionId: 'cs_1', trackingSessionId: 'hn_1', url: '/demo-checkout/cs_1' } },
    });
    renderPrompt();
    fireEvent.click(await screen.findByRole('button', { name: 'Start Your 7-Day Trial for $1' }));
    await waitFor(() => expect(fetchMock.mock.calls.some(([url]) => url === '/api/create-checkout.js')).toBe(true));
    const call = fetchMock.mock.calls.find(([url]) => url === '/api/create-checkout.js');
    const touch = { utm_source: 'google', keyword: 'email help', campaignid: '777' };
    expect(JSON.parse(String(call?.[1]?.body))).toMatchObject({ ...touch, firstTouch: touch, source: 'chat_trial_prompt' });
  });

  it('starts the trial checkout, is busy meanwhile and sends the browser to its url', async () => {
    const assign = watchRedirects();
    let answer: (reply: { body: unknown }) => void = () => {};
    const fetchMock = mockApi({
      'GET /api/auth/me': { body: { user: MEMBER } },
      'POST /api/create-checkout.js': () => new Promise((resolve) => (answer = resolve)),
    });
    renderPrompt();
    fireEvent.click(await screen.findByRole('button', { name: 'Start Your 7-Day Trial for $1' }));

    const busy = (await screen.findByRole('button', { name: 'Redirecting to checkout...' })) as HTMLButtonElement;
    expect(busy.disabled).toBe(true);
    const call = fetchMock.mock.calls.find(([url]) => url === '/api/create-checkout.js');
    expect(JSON.parse(String(call?.[1]?.body))).toEqual({
      firstTouch: {},
      source: 'chat_trial_prompt',
      isTrial: true,
      cancelUrl: '/?canceled=true',
    });

    answer({ body: STARTED });
    await waitFor(() => expect(assign).toHaveBeenCalledWith('https://checkout.example/pay/cs_1'));
    expect(assign).toHaveBeenCalledTimes(1);
  });

  it('follows a same-site demo checkout path too', async () => {
    const assign = watchRedirects();
    mockApi({ 'POST /api/create-checkout.js': { body: { ...STARTED, url: '/demo-checkout/demo_1' } } });
    renderPrompt();
    fireEvent.click(await screen.findByRole('button', { name: 'Start Your Trial for $1' }));
    await waitFor(() => expect(assign).toHaveBeenCalledWith('/demo-checkout/demo_1'));
  });

  it('says the redirect failed when the page is still here 5 seconds later', async () => {
    watchRedirects();
    let answer: (reply: { body: unknown }) => void = () => {};
    mockApi({ 'POST /api/create-checkout.js': () => new Promise((resolve) => (answer = resolve)) });
    renderPrompt();
    fireEvent.click(await screen.findByRole('button', { name: 'Start Your Trial for $1' }));
    await screen.findByRole('button', { name: 'Redirecting to checkout...' });

    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    answer({ body: STARTED });
    await act(() => vi.advanceTimersByTimeAsync(4999));
    expect(screen.queryByRole('alert')).toBeNull();
    expect(screen.getByRole('button', { name: 'Redirecting to checkout...' })).toBeTruthy();

    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(screen.getByRole('alert').textContent).toBe('Failed to redirect to checkout page. Please try again.');
    expect((screen.getByRole('button', { name: 'Start Your Trial for $1' }) as HTMLButtonElement).disabled).toBe(false);
  });

  it('says the redirect failed at once when the answer has no url', async () => {
    const assign = watchRedirects();
    mockApi({ 'POST /api/create-checkout.js': { body: { sessionId: 'cs_1', trackingSessionId: 's1' } } });
    renderPrompt();
    fireEvent.click(await screen.findByRole('button', { name: 'Start Your Trial for $1' }));
    expect((await screen.findByRole('alert')).textContent).toBe(
      'Failed to redirect to checkout page. Please try again.',
    );
    expect(assign).not.toHaveBeenCalled();
  });

  it("gives the request's error in the failure text", async () => {
    const assign = watchRedirects();
    mockApi({
      'POST /api/create-checkout.js': {
        status: 503,
        body: { error: 'payments_unavailable', message: 'Payments are unavailable right now' },
      },
    });
    renderPrompt();
    fireEvent.click(await screen.findByRole('button', { name: 'Start Your Trial for $1' }));
    expect((await screen.findByRole('alert')).textContent).toBe(
      'Failed to redirect to checkout page: Payments are unavailable right now',
    );
    expect(assign).not.toHaveBeenCalled();
  });

  it('closes from its Close button', async () => {
    mockApi();
    const { onClose } = renderPrompt();
    fireEvent.click(screen.getByRole('button', { name: 'Close' }));
    expect(onClose).toHaveBeenCalledTimes(1);
  });
});
